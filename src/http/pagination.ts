// List conventions of DESIGN.md: `limit` (default 50, at most 100) and `offset` (default 0) in the query;
// answers carry `data`, `count` (items in data) and `hasMore`. Queries fetch limit + 1 rows to know.
import { validationError } from '../errors.ts';

export interface Page {
  limit: number;
  offset: number;
}

export function parsePage(query: Record<string, unknown>): Page {
  return {
    limit: wholeNumber(query, 'limit', 50, 1, 100),
    offset: wholeNumber(query, 'offset', 0, 0, 1_000_000_000),
  };
}

export function pageOf<T>(rows: T[], page: Page): { data: T[]; count: number; hasMore: boolean } {
  const data = rows.slice(0, page.limit);
  return { data, count: data.length, hasMore: rows.length > page.limit };
}

function wholeNumber(query: Record<string, unknown>, name: string, fallback: number, min: number, max: number): number {
  const raw = query[name];
  if (raw === undefined || raw === '') return fallback;
  if (typeof raw !== 'string' || !/^\d{1,10}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw validationError(name, `must be a whole number from ${min} to ${max}`);
  }
  return Number(raw);
}
