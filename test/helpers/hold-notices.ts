/** Holds back the notices a PostgreSQL store sends the other instances until the returned function is called. */
export function holdNotices(store: unknown): () => void {
  const announcer = (store as { announcer: { notify: (payloads: string[]) => Promise<unknown> } }).announcer;
  const send = announcer.notify;
  let open = () => {};
  const gate = new Promise<void>((r) => (open = r));
  announcer.notify = async (payloads) => {
    await gate;
    return send(payloads);
  };
  return () => {
    announcer.notify = send;
    open();
  };
}
