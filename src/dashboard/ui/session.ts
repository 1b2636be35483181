// Who is signed in, as GET /profile tells the app; every page gets it.
export interface Me {
  user: { id: string; email: string };
  workspace: { id: string; name: string };
  /** The box runs as `mailwright try`: mail to other domains is kept in its outbox, never sent. */
  tryMode?: boolean;
}
