// The dashboard's icons, inline SVG drawn in currentColor: emoji and pictograph characters are empty boxes where
// no emoji font is installed (Debian's Chromium, most servers' browsers). An icon with a `label` is an image of
// that name; one without is decoration (aria-hidden) beside text that says the same.

const PATHS = {
  close: 'M6 6l12 12M18 6L6 18',
  menu: 'M4 6h16M4 12h16M4 18h16',
  back: 'M19 12H5M11 18l-6-6 6-6',
  star: 'M12 3l2.7 5.6 6.1.9-4.4 4.3 1 6.1-5.4-2.9-5.4 2.9 1-6.1-4.4-4.3 6.1-.9z',
  paperclip: 'M16 7v10a4 4 0 0 1-8 0V6a2.5 2.5 0 0 1 5 0v10a1 1 0 0 1-2 0V8',
  clock: 'M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18zM12 7v5l3 2',
  /** A label that files mail away from the Inbox. */
  bucket: 'M4 6h8a6 6 0 0 1 6 6v7M14 15l4 4 4-4',
  received: 'M7 7l10 10M17 8v9H8',
  sent: 'M7 17L17 7M8 7h9v9',
  chevronDown: 'M6 9l6 6 6-6',
  chevronRight: 'M9 6l6 6-6 6',
  refresh: 'M20 12a8 8 0 1 1-2.3-5.7M20 4v5h-5',
  check: 'M5 12l5 5 9-10',
} as const;

export type IconName = keyof typeof PATHS;

/** `filled`: the shape filled (a set star); `label`: the icon's accessible name, else it is hidden from readers. */
export function Icon({ name, label, filled = false }: { name: IconName; label?: string; filled?: boolean }) {
  return (
    <svg
      class="svg-icon"
      viewBox="0 0 24 24"
      width="1em"
      height="1em"
      fill={filled ? 'currentColor' : 'none'}
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
      data-icon={name}
      {...(label ? { role: 'img', 'aria-label': label } : { 'aria-hidden': 'true' })}
    >
      <path d={PATHS[name]} />
    </svg>
  );
}
