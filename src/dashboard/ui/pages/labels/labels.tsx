// Labels and filing rules: the labels as a tree (tree.tsx) and a label's page (label.tsx) with its settings and
// rules. The list is read once here and followed while stored mail is being filed. Paths: /labels, /labels/:id.
import { useEffect } from 'preact/hooks';
import { api } from '../../api.ts';
import { useLoad } from '../../components/load.ts';
import { useLocation } from '../../router.ts';
import type { Me } from '../../session.ts';
import { LabelPage } from './label.tsx';
import type { LabelList } from './model.ts';
import { LabelTree } from './tree.tsx';

export function Labels(_: { me: Me }) {
  const { path } = useLocation();
  const id = path.split('/')[2];
  const labels = useLoad(() => api<LabelList>('/labels'), []);
  const pending = labels.data?.mailbox.resortPending ?? 0;
  // While stored mail is being filed in the background, the counts move: follow them until it is done.
  useEffect(() => {
    if (!pending) return;
    const t = setTimeout(labels.reload, 2000);
    return () => clearTimeout(t);
  }, [labels.data]);

  if (id) return <LabelPage id={decodeURIComponent(id)} labels={labels} />;
  return <LabelTree labels={labels} />;
}
