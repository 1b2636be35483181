// The Settings section of the sidebar: the account's settings at /settings, and the audit log at /settings/audit.
import type { Me } from '../session.ts';
import { useLocation } from '../router.ts';
import { Settings } from './settings.tsx';
import { AuditLog } from './audit-log.tsx';

export function SettingsSection({ me }: { me: Me }) {
  const { path } = useLocation();
  return path === '/settings/audit' ? <AuditLog me={me.user.id} /> : <Settings me={me} />;
}
