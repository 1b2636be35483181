// The sign, in the sidebar on every page, that this box runs as `mailwright try`: what it sends to other
// domains is kept in its local outbox (the Sent view), never sent. Shown only when GET /profile says tryMode.
export function TryBanner() {
  return (
    <div class="try-banner" role="note" aria-label="Try mode">
      <strong>Try mode</strong>
      <span>
        Mail to other domains is kept here, not sent: see <a href="/mail/sent">Sent</a>.
      </span>
    </div>
  );
}
