/**
 * What a realtime client asks to be told: `notes` (every record of a resource), `notes/<uuid>` (one
 * record) or `notes?filter=status:new` (the records a list filter matches, with the list API's
 * syntax). Checked when subscribing: the resource is served, the caller may view it (the record),
 * the filter is one the list API takes.
 */
import { authorize, type Principal } from "../access/permissions";
import { badRequest } from "../errors";
import { checkUuid } from "../records/prepare";
import type { ResourceDef } from "../definitions/types";
import type { Site } from "../site";
import { filterMatcher, type Matcher } from "./match";

export type Subscription = {
  /** As the client wrote it: events name the subscription they are for. */
  text: string;
  resource: string;
  uuid: string | null;
  filter: Matcher | null;
  /** The definition it was made with: one changed since makes it anew (see Hub.refresh). */
  def: ResourceDef;
  /** `[text]` as JSON: how events name it. */
  named: string;
};

/** Subscriptions of one stream, at most. */
export const MAX_SUBSCRIPTIONS = 100;
const MAX_TEXT = 2000;

/**
 * Subscriptions as the `subscribe` parameter lists them: comma-separated, except that one with a
 * query (`?filter=…`, whose filter has commas of its own) runs to the end of its parameter. So a
 * filtered subscription comes last in its parameter, or in a parameter of its own.
 */
export function splitSubscribe(params: string[]): string[] {
  const out: string[] = [];
  for (const param of params) {
    const q = param.indexOf("?");
    const plain = q < 0 ? param : param.slice(0, param.lastIndexOf(",", q) + 1);
    for (const s of plain.split(",")) if (s.trim()) out.push(s.trim());
    if (q >= 0) out.push(param.slice(plain.length).trim());
  }
  return out;
}

export function parseSubscription(site: Site, p: Principal, text: string): Subscription {
  if (text.length > MAX_TEXT) throw badRequest(`a subscription may be at most ${MAX_TEXT} characters long`);
  const q = text.indexOf("?");
  const path = q < 0 ? text : text.slice(0, q);
  const [resource, uuid, more] = path.split("/");
  if (more !== undefined || !resource) throw badRequest(`subscription "${text}" is not RESOURCE, RESOURCE/UUID or RESOURCE?filter=…`);
  const def = site.resource(resource);
  const id = uuid === undefined ? null : checkUuid(uuid);
  authorize(p, resource, "view", id ?? undefined);
  let filter: Matcher | null = null;
  if (q >= 0) {
    const params = new URLSearchParams(text.slice(q + 1));
    for (const key of params.keys()) if (key !== "filter") throw badRequest(`subscription "${text}": only filter may be given (not ${key})`);
    const raw = params.get("filter");
    if (raw) filter = filterMatcher(site.store.dialect, def, raw);
  }
  return { text, resource, uuid: id, filter, def, named: JSON.stringify([text]) };
}

/** All or nothing: one subscription refused refuses the whole set (with its error). */
export function parseSubscriptions(site: Site, p: Principal, texts: string[]): Subscription[] {
  const unique = [...new Set(texts)];
  if (unique.length > MAX_SUBSCRIPTIONS) throw badRequest(`a stream may have at most ${MAX_SUBSCRIPTIONS} subscriptions`);
  return unique.map((t) => parseSubscription(site, p, t));
}
