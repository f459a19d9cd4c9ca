/** The shape every written record starts as: a JSON object of field values. */
import { badRequest } from "../errors";

export type Values = Record<string, unknown>;

export function asObject(body: unknown, what = "the request body"): Values {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw badRequest(`${what} must be a JSON object`);
  return body as Values;
}
