// Who is signed in, as GET /profile tells the app; every page gets it.
export interface Me {
  user: { id: string; email: string };
  workspace: { id: string; name: string };
}
