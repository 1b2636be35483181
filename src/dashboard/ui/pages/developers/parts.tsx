// What the Developers tabs share: the line that says what a tab is for (with its main action), and a secret
// shown in clear this once.
import type { ComponentChildren } from 'preact';
import { Badge } from '../../components/feedback.tsx';
import { CopyButton } from '../../components/forms.tsx';

export function Intro({ children, action }: { children: ComponentChildren; action?: ComponentChildren }) {
  return (
    <div class="row" style={{ margin: '4px 0 16px', alignItems: 'flex-start' }}>
      <p class="muted grow" style={{ margin: 0, minWidth: '240px' }}>
        {children}
      </p>
      {action}
    </div>
  );
}

/** A secret in clear, this once: the box keeps only a hash or a sealed copy. */
export function SecretOnce({ secret, label, children, actions }: { secret: string; label: string; children: ComponentChildren; actions: ComponentChildren }) {
  return (
    <div style={{ display: 'grid', gap: '12px' }}>
      <p role="alert" style={{ margin: 0 }}>
        <Badge tone="warn">Shown once</Badge> {children}
      </p>
      <div class="secret" data-testid="secret">
        {secret}
      </div>
      <div class="row" style={{ justifyContent: 'flex-end' }}>
        <CopyButton text={secret} label={`Copy ${label}`} />
        {actions}
      </div>
    </div>
  );
}
