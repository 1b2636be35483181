// Times and sizes as the dashboard writes them: a time as a list shows it (today the hour, else the date, the
// full time on hover), and bytes in B, KB or MB.
export const when = (iso: string | null | undefined) => {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date();
  return d.toDateString() === today.toDateString() ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : d.toLocaleDateString([], { month: 'short', day: 'numeric', year: d.getFullYear() === today.getFullYear() ? undefined : 'numeric' });
};

/** A time as the list shows it (`when`), the full time on hover; `never` where there is none. */
export function At({ iso, never = '—' }: { iso: string | null | undefined; never?: string }) {
  if (!iso) return <span class="muted">{never}</span>;
  return (
    <time dateTime={iso} title={new Date(iso).toLocaleString()}>
      {when(iso)}
    </time>
  );
}

export const bytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`);
