// The Overview's Activity card: mail over the last 7, 30 or 90 days (GET /analytics), its totals, and sent and
// received per UTC day drawn by uPlot.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { api } from '../../api.ts';
import { Empty, Loaded } from '../../components/feedback.tsx';
import { useLoad } from '../../components/load.ts';
import { count, day, type Analytics } from './model.ts';

export const WINDOWS = [7, 30, 90] as const;

export function Activity({ days }: { days: number }) {
  const analytics = useLoad(() => api<Analytics>(`/analytics?days=${days}`), [days]);
  return (
    <div class="card" style={{ marginBottom: '20px' }} aria-label="Activity">
      <div class="row" style={{ justifyContent: 'space-between', marginBottom: '4px' }}>
        <h2 style={{ margin: 0 }}>Activity</h2>
        <nav class="tabs" aria-label="Window" style={{ marginBottom: 0, borderBottom: 0 }}>
          {WINDOWS.map((d) => (
            <a href={`/overview?days=${d}`} class={d === days ? 'active' : ''} aria-current={d === days ? 'page' : undefined}>
              {d} days
            </a>
          ))}
        </nav>
      </div>
      <Loaded state={analytics}>
        {(a) => {
          const m = a.metrics;
          const totals: Array<[string, number, string?]> = [
            ['Sent', m.sent],
            ['Delivered', m.delivered],
            ['Bounced', m.bounced, m.bounced > 0 ? 'var(--bad)' : undefined],
            ['Blocked', m.blocked],
            ['Received', m.received],
            ['Opened', m.opened],
            ['Clicks', m.clicks],
            ['Complaints', m.complaints, m.complaints > 0 ? 'var(--bad)' : undefined],
          ];
          const quiet = a.timeline.every((d) => d.sent === 0 && d.received === 0);
          return (
            <>
              <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(96px, 1fr))', gap: '10px', margin: '12px 0 16px' }}>
                {totals.map(([label, n, color]) => (
                  <div>
                    <div style={{ fontSize: '20px', fontWeight: 650, color }}>{count(n)}</div>
                    <div class="muted" style={{ fontSize: '12px' }}>
                      {label}
                    </div>
                  </div>
                ))}
              </div>
              {quiet ? (
                <Empty title={`No mail in the last ${a.days} days`}>
                  Send with the API or SMTP (see <a href="/developers">Developers</a>) and each day shows here.
                </Empty>
              ) : (
                <Timeline timeline={a.timeline} />
              )}
            </>
          );
        }}
      </Loaded>
    </div>
  );
}

const HEIGHT = 240;

/** Sent and received per UTC day, drawn by uPlot on a canvas that follows the card's width. */
function Timeline({ timeline }: { timeline: Analytics['timeline'] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const css = getComputedStyle(document.documentElement);
    const color = (name: string) => css.getPropertyValue(name).trim();
    const [accent, good, muted, line] = [color('--accent'), color('--good'), color('--muted'), color('--line')];
    const axis: uPlot.Axis = { stroke: muted, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 }, font: '12px system-ui, sans-serif' };
    const series = (label: string, stroke: string): uPlot.Series => ({ label, stroke, width: 2, fill: `${stroke}1f`, points: { show: timeline.length <= 31, size: 5 }, value: (_u, v) => (v === null ? '—' : count(v)) });
    const plot = new uPlot(
      {
        width: Math.max(el.clientWidth, 200),
        height: HEIGHT,
        // The days are UTC days: shown as such whatever the browser's zone.
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))] } },
        axes: [
          // Whole days only: uPlot would otherwise tick every few hours over a week.
          { ...axis, incrs: [1, 2, 7, 14, 28].map((n) => n * 86_400), values: (_u, splits) => splits.map((s) => day(new Date(s * 1000).toISOString())) },
          { ...axis, size: 48, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 250_000, 500_000, 1_000_000], values: (_u, splits) => splits.map(count) },
        ],
        series: [{ label: 'Day', value: (_u, v) => (v === null ? '' : day(new Date(v * 1000).toISOString())) }, series('Sent', accent), series('Received', good)],
        cursor: { drag: { x: false, y: false } },
      },
      [timeline.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000), timeline.map((d) => d.sent), timeline.map((d) => d.received)],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 200), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [timeline]);
  return <div class="chart" ref={box} role="figure" aria-label={`Sent and received mail per day over ${timeline.length} days`} />;
}
