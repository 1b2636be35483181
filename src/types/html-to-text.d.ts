// html-to-text 10 ships no types; this is the one function the composer uses.
declare module 'html-to-text' {
  export function convert(html: string, options?: Record<string, unknown>): string;
}
