// Placeholder while the page is written.
import type { Me } from '../main.tsx';
import { Page } from '../components.tsx';

export function Domains(_: { me: Me }) {
  return <Page title="Domains">{null}</Page>;
}
