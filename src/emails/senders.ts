// The From addresses a workspace has sent mail from, for GET /sending-identities.
import type { Db } from '../db/open.ts';

export function senderAddresses(db: Db, workspaceId: string): string[] {
  return db.prepare("SELECT DISTINCT lower(from_address) FROM emails WHERE workspace_id = ? AND direction = 'out' ORDER BY 1").pluck().all(workspaceId) as string[];
}
