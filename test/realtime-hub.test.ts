/**
 * The realtime hub's window, on a real site: what a client reconnecting with Last-Event-ID is told
 * depends on whether anyone could resume when the changes were made. The window's age is the
 * server's five minutes there; here it is short enough to pass within a test.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { makeSite, siteEnv } from "./helpers/site";
import { openSite } from "../src/core/open-site";
import { loadConfig } from "../src/core/config";
import { createRecord } from "../src/core/records/service";
import { SYSTEM } from "../src/core/access/permissions";
import { parseSubscriptions } from "../src/core/realtime/subscription";
import { Hub, type Outlet } from "../src/core/realtime/hub";
import type { Site } from "../src/core/site";

const WINDOW_MS = 400;
let dir: string;
let site: Site;
let hub: Hub;

beforeAll(async () => {
  dir = makeSite({ defs: { notes: { fields: { title: { type: "text" } } } } });
  site = await openSite(loadConfig({ dir, env: { ...process.env, ...siteEnv(dir) } }));
  hub = new Hub(site, { maxStreams: 10, maxPerOwner: 10, window: 1000, windowMs: WINDOW_MS, heartbeatMs: 60_000, recheckMs: 60_000, pollMs: 60_000 });
  await hub.start();
});
afterAll(async () => {
  await hub.stop();
  await site.close();
  rmSync(dir, { recursive: true, force: true });
});

type Event = { id: string; event: string; data: Record<string, unknown> };

/** A stream whose events are parsed as they are flushed. */
function open(lastEventId: string | null = null) {
  const events: Event[] = [];
  let pending = "";
  const decoder = new TextDecoder();
  const out: Outlet = {
    write: (chunk) => void (pending += decoder.decode(chunk)),
    flush: () => {
      for (const block of pending.split("\n\n").filter((b) => b.startsWith("id: "))) {
        const [id, event, data] = block.split("\n").map((line) => line.slice(line.indexOf(": ") + 2));
        events.push({ id, event, data: JSON.parse(data) });
      }
      pending = "";
    },
    full: () => false,
    onDrain: () => {},
    end: () => {},
  };
  const stream = hub.open({ principal: SYSTEM, owner: "test", subscriptions: parseSubscriptions(site, SYSTEM, ["notes"]), reauth: async () => SYSTEM, lastEventId, out });
  out.flush();
  return { stream, events };
}

const create = async (title: string) => (await createRecord(site, SYSTEM, "notes", { title })).row.uuid;
/** The hub tells its streams in turns (20 ms apart at most). */
const told = () => Bun.sleep(60);
const creates = (events: Event[]) => events.filter((e) => e.event === "create").map((e) => (e.data.record as { title: string }).title);

test("a client back within the window after its stream closed is told exactly what it missed", async () => {
  const first = open();
  await create("seen");
  await told();
  const last = first.events.at(-1)!;
  expect(last.event).toBe("create");
  hub.gone(first.stream);
  await create("missed 1");
  await create("missed 2");
  const back = open(last.id);
  await told();
  expect(back.events.some((e) => e.event === "reset")).toBe(false);
  expect(creates(back.events)).toEqual(["missed 1", "missed 2"]);
  hub.gone(back.stream);
});

test("changes made while no stream was open for longer than the window are not kept: a client coming back is told reset, and new streams go on", async () => {
  const first = open();
  await create("before");
  await told();
  const last = first.events.at(-1)!;
  hub.gone(first.stream);
  await Bun.sleep(WINDOW_MS + 100);
  // Nobody could resume these: the hub gives them ids and keeps nothing.
  await create("unkept 1");
  await create("unkept 2");
  const back = open(last.id);
  await told();
  expect(back.events.map((e) => e.event)).toEqual(["connect", "reset"]);
  expect(creates(back.events)).toEqual([]);
  // The stream after the reset hears what follows, with ids past the ones given meanwhile.
  await create("after");
  await told();
  expect(creates(back.events)).toEqual(["after"]);
  const afterId = Number(back.events.at(-1)!.id.split("-")[1]);
  expect(afterId).toBe(Number(last.id.split("-")[1]) + 3);
  // A client of that stream that drops and comes back at once resumes as before.
  hub.gone(back.stream);
  await create("missed after");
  const again = open(back.events.at(-1)!.id);
  await told();
  expect(again.events.some((e) => e.event === "reset")).toBe(false);
  expect(creates(again.events)).toEqual(["missed after"]);
  hub.gone(again.stream);
});
