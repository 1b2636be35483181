// The From addresses a workspace has sent mail from, for GET /sending-identities.
import { column } from '../db/query.ts';

export const senderAddresses = (workspaceId: string) =>
  column<string>("SELECT DISTINCT lower(from_address) FROM emails WHERE workspace_id = ? AND direction = 'out' ORDER BY 1", workspaceId);
