// Placeholder while the page is written.
import type { Me } from '../main.tsx';
import { Page } from '../components.tsx';

export function Settings(_: { me: Me }) {
  return <Page title="Settings">{null}</Page>;
}
