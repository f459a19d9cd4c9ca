/**
 * The mails resd sends: plain text and simple HTML, the site's name and links to its admin pages.
 * Names and addresses come from users: in HTML they are escaped, in headers nodemailer encodes them
 * (and resd's addresses hold no line breaks: the e-mail check refuses whitespace).
 */
import type { Site } from "../site";
import { publicBase, siteName, type Mail } from "./send";

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** A name as a line of a mail: no control characters, bounded. */
const line = (s: string) => s.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, 100);

function compose(site: Site, to: string, subject: string, paragraphs: string[], link?: { url: string; label: string }): Mail {
  const name = siteName(site);
  const text = [...paragraphs, ...(link ? [`${link.label}: ${link.url}`] : []), `— ${name}`].join("\n\n");
  const html = `<!doctype html><html><body style="font-family:sans-serif;line-height:1.5">${paragraphs.map((p) => `<p>${esc(p)}</p>`).join("")}${link ? `<p><a href="${esc(link.url)}">${esc(link.label)}</a></p><p style="color:#666;font-size:90%">${esc(link.url)}</p>` : ""}<p>— ${esc(name)}</p></body></html>`;
  return { to, subject: `${line(subject)} (${line(name)})`, text, html };
}

const minutes = (seconds: number) => (seconds >= 86_400 ? `${Math.round(seconds / 86_400)} days` : seconds >= 3600 ? `${Math.round(seconds / 3600)} hours` : `${Math.round(seconds / 60)} minutes`);

export const resetLink = (site: Site, token: string) => `${publicBase(site)}/admin/reset-password?token=${encodeURIComponent(token)}`;
export const inviteLink = (site: Site, token: string) => `${publicBase(site)}/admin/reset-password?invite=1&token=${encodeURIComponent(token)}`;
export const emailChangeLink = (site: Site, token: string) => `${publicBase(site)}/admin/confirm-email?token=${encodeURIComponent(token)}`;

export const resetMail = (site: Site, to: string, token: string): Mail =>
  compose(site, to, "Reset your password", [
    "Someone (we hope you) asked to reset the password of this account.",
    `The link below lets you choose a new one; it works once, within ${minutes(site.config.resetTtl)}. If you did not ask, ignore this mail: your password stays as it is.`,
  ], { url: resetLink(site, token), label: "Choose a new password" });

export const inviteMail = (site: Site, to: string, token: string, by: string | null): Mail =>
  compose(site, to, "You are invited", [
    `${by ? line(by) : "An administrator"} invited you to ${line(siteName(site))}.`,
    `Choose your password with the link below; it works once, within ${minutes(site.config.inviteTtl)}.`,
  ], { url: inviteLink(site, token), label: "Accept the invitation" });

export const emailChangeMail = (site: Site, to: string, token: string): Mail =>
  compose(site, to, "Confirm your new e-mail address", [
    "Someone (we hope you) asked to use this address for their account.",
    `The change happens when you open the link below, within ${minutes(site.config.resetTtl)}. If you did not ask, ignore this mail.`,
  ], { url: emailChangeLink(site, token), label: "Confirm this address" });

export const emailChangeNotice = (site: Site, to: string, newAddress: string): Mail =>
  compose(site, to, "Your e-mail address is about to change", [
    `Someone signed in to your account asked to change its e-mail address to ${newAddress}. It changes once that address is confirmed.`,
    "If this was not you, change your password now and tell an administrator.",
  ]);

export const passwordChangedNotice = (site: Site, to: string): Mail =>
  compose(site, to, "Your password was changed", [
    "The password of your account was just changed through a reset link, and every session and token of the account was ended.",
    "If this was not you, tell an administrator at once.",
  ]);
