// The writer thread's module: app.ts hands its path to the Writer (db/writer.ts), whose thread imports it. It
// serves the job table with db/writer-worker.ts; both imports are literal, so what the writer thread runs can be
// followed from here, by a reader and by dependency-cruiser, to every job.
import { serveWriter } from '../db/writer-worker.ts';
import { background, jobs, readsFirst } from './writer-jobs.ts';

serveWriter(jobs, background, readsFirst);
