// Turns an untrusted request body or query into a typed value with a zod schema, or a 400
// validation_error whose message names the first offending field.
import type { z } from 'zod';
import { ApiError } from '../errors.ts';

export function parseInput<T extends z.ZodType>(schema: T, input: unknown, where: 'body' | 'query' = 'body'): z.infer<T> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  const errors = result.error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.map(String).join('.') : where,
    message: issue.message,
  }));
  return fail(errors);
}

function fail(errors: Array<{ path: string; message: string }>): never {
  throw new ApiError(400, 'validation_error', `${errors[0].path}: ${errors[0].message}`, { errors });
}
