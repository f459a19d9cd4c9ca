/**
 * Spam checks for forms that post to the API (typically anonymous `[#api-allow post …#]` forms).
 * Two optional body fields, removed before validation:
 * - `_form_key`: a key from `GET /api/v1/auth/form-key/<resource>`; when sent it must be valid for
 *   this resource and at most FORM_KEY_TTL old (HMAC with the site's token key, so nothing is stored).
 * - `_hp`: the honeypot, a field hidden from people; when sent it must be empty.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Site } from "../site";
import { AppError } from "../errors";

export const FORM_KEY_FIELD = "_form_key";
export const HONEYPOT_FIELD = "_hp";
export const FORM_KEY_TTL = 24 * 3600;

const mac = (site: Site, resource: string, ts: number) =>
  createHmac("sha256", site.config.tokenSecret).update(`form-key\0${resource}\0${ts}`).digest("base64url").slice(0, 32);

export function issueFormKey(site: Site, resource: string, now = Math.floor(Date.now() / 1000)): { form_key: string; expires: number } {
  return { form_key: `${now}.${mac(site, resource, now)}`, expires: now + FORM_KEY_TTL };
}

export function formKeyValid(site: Site, resource: string, key: unknown, now = Math.floor(Date.now() / 1000)): boolean {
  if (typeof key !== "string") return false;
  const m = /^(\d{1,12})\.([A-Za-z0-9_-]{32})$/.exec(key);
  if (!m) return false;
  const ts = Number(m[1]);
  if (ts > now + 60 || now - ts > FORM_KEY_TTL) return false;
  const want = Buffer.from(mac(site, resource, ts));
  const got = Buffer.from(m[2]);
  return want.length === got.length && timingSafeEqual(want, got);
}

/** Checks and removes the form fields; the rest of the body goes on to validation. */
export function stripFormFields(site: Site, resource: string, input: Record<string, unknown>): Record<string, unknown> {
  if (!(FORM_KEY_FIELD in input) && !(HONEYPOT_FIELD in input)) return input;
  const { [FORM_KEY_FIELD]: key, [HONEYPOT_FIELD]: hp, ...rest } = input;
  if (hp !== undefined && hp !== null && hp !== "") {
    throw new AppError(400, "INVALID_DATA", "the form was rejected as spam", { errors: { [HONEYPOT_FIELD]: "must be empty" } });
  }
  if (key !== undefined && !formKeyValid(site, resource, key)) {
    throw new AppError(403, "ACCESS_DENIED", "the form key is invalid or expired; reload the form");
  }
  return rest;
}
