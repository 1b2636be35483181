// One limit of the plans a workspace holds and how much of it this month has used, as a meter: the Overview
// and Billing show the same ones.
import { day } from './model.ts';

export function UsageMeter({ label, used, limit, format, resets }: { label: string; used: number; limit: number | null; format: (n: number) => string; resets: string }) {
  const share = limit === null ? null : limit === 0 ? 1 : Math.min(1, used / limit);
  const tone = share === null || share < 0.8 ? 'var(--accent)' : share < 1 ? 'var(--warn)' : 'var(--bad)';
  return (
    <div class="card" aria-label={label}>
      <div class="muted">{label}</div>
      <div class="stat">{format(used)}</div>
      <div class="muted" style={{ marginBottom: '10px' }}>
        {limit === null ? 'Unlimited on your plan' : `of ${format(limit)} · resets ${day(resets)}`}
      </div>
      {share !== null && (
        <div class="progress" role="progressbar" aria-label={`${label}: share of the limit used`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(share * 100)}>
          <div style={{ width: `${Math.max(share * 100, used > 0 ? 2 : 0)}%`, background: tone }} />
        </div>
      )}
    </div>
  );
}
