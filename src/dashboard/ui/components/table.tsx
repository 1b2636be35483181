// Lists as tables: the rows under their header, or a card saying why there are none; and the pager under a list
// read a page at a time.
import type { ComponentChildren } from 'preact';

/** `head`: the header row's cells (none: no header); `empty`: what the card says when there are no rows. */
export function Rows<T>({ rows, label, head, empty, children: row }: { rows: T[]; label?: string; head?: ComponentChildren; empty: ComponentChildren; children: (item: T) => ComponentChildren }) {
  if (rows.length === 0) return <div class="card">{empty}</div>;
  return (
    <table class="table" aria-label={label}>
      {head && (
        <thead>
          <tr>{head}</tr>
        </thead>
      )}
      <tbody>{rows.map(row)}</tbody>
    </table>
  );
}

/** Which rows are shown of a list read `step` at a time from `offset`, and the buttons to the pages before and after. */
export function Pager({ offset, step, shown, hasMore, labels: [before, after], go }: { offset: number; step: number; shown: number; hasMore: boolean; labels: [string, string]; go: (offset: number) => void }) {
  if (offset === 0 && !hasMore) return null;
  return (
    <div class="row" style={{ justifyContent: 'flex-end', marginTop: '10px' }}>
      <span class="muted">
        {offset + 1}–{offset + shown}
      </span>
      <button class="button small" disabled={offset === 0} onClick={() => go(Math.max(0, offset - step))}>
        {before}
      </button>
      <button class="button small" disabled={!hasMore} onClick={() => go(offset + step)}>
        {after}
      </button>
    </div>
  );
}
