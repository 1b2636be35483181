// A message's files: the limits said first (10 files, 10 MB in all), each upload to the draft with its progress,
// an error on the file it belongs to, and removing one.
import { api, upload } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { bytes } from '../../components/format.tsx';
import { messageOf } from '../../components/load.ts';
import { Icon } from '../../icons.tsx';

export const MAX_FILES = 10;
const MAX_BYTES = 10 * 1000 * 1000;

export interface FileRow {
  id?: string;
  name: string;
  size: number;
  progress: number;
  error?: string;
}
type SetFiles = (change: (files: FileRow[]) => FileRow[]) => void;

/** Uploads what was chosen, within the limits, to the draft `draft()` saves first and names. */
export async function attach(chosen: FileList, files: FileRow[], setFiles: SetFiles, draft: () => Promise<string>): Promise<void> {
  const used = files.reduce((n, f) => n + (f.error ? 0 : f.size), 0);
  let room = MAX_BYTES - used;
  for (const file of Array.from(chosen)) {
    if (files.filter((f) => !f.error).length >= MAX_FILES) {
      toast(`At most ${MAX_FILES} files per message`);
      break;
    }
    if (file.size > room) {
      toast(`${file.name} (${bytes(file.size)}) does not fit: ${bytes(Math.max(0, room))} of 10 MB left`);
      continue;
    }
    room -= file.size;
    const row: FileRow = { name: file.name, size: file.size, progress: 0 };
    setFiles((fs) => [...fs, row]);
    const id = await draft();
    try {
      const done = await upload(`/drafts/${id}/attachments`, file, (p) => setFiles((fs) => fs.map((f) => (f === row ? Object.assign(row, { progress: p }) : f))));
      setFiles((fs) => fs.map((f) => (f === row ? Object.assign(row, { id: done.id, progress: 1 }) : f)));
    } catch (err) {
      setFiles((fs) => fs.map((f) => (f === row ? Object.assign(row, { error: messageOf(err) }) : f)));
    }
  }
}

/** The files of the message, each with its progress while it uploads, or Remove once it is there. */
export function Files({ files, setFiles }: { files: FileRow[]; setFiles: SetFiles }) {
  return (
    <>
      {files.map((f) => (
        <div class="row" data-testid="attachment">
          <span class="grow">
            <Icon name="paperclip" /> {f.name} <span class="muted">{bytes(f.size)}</span> {f.error && <span class="form-error">{f.error}</span>}
          </span>
          {f.progress < 1 && !f.error ? (
            <div class="progress" style={{ width: '120px' }}>
              <div style={{ width: `${Math.round(f.progress * 100)}%` }} />
            </div>
          ) : (
            f.id && (
              <button
                class="button small"
                onClick={async () => {
                  await api(`/attachments/${f.id}`, { method: 'DELETE' }).catch(() => {});
                  setFiles((fs) => fs.filter((x) => x !== f));
                }}
              >
                Remove
              </button>
            )
          )}
        </div>
      ))}
    </>
  );
}
