// Placeholder while the page is written.
import type { Me } from '../main.tsx';
import { Page } from '../components.tsx';

export function Templates(_: { me: Me }) {
  return <Page title="Templates">{null}</Page>;
}
