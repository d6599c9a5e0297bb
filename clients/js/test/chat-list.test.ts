import { describe, expect, it } from "vitest";

import {
  ChatListStore,
  ChatqlClient,
  type ChatEventSink,
  type ChatEventSource,
  type ChatListEvent,
  type ChatSummary,
} from "../src/client.js";

/** A `chatEvents` source the test drives by hand. */
class FakeEvents implements ChatEventSource {
  sink: ChatEventSink | null = null;
  filter: Readonly<Record<string, unknown>> | null | undefined;
  stopped = false;

  subscribe(filter: Readonly<Record<string, unknown>> | null, sink: ChatEventSink): () => void {
    this.filter = filter;
    this.sink = sink;
    return () => {
      this.stopped = true;
    };
  }

  emit(type: ChatListEvent["type"], chatId: string, chat: ChatSummary | null = null): void {
    this.sink?.next({ type, chatId, at: "2026-01-01T00:00:00+00:00", chat });
  }
}

function summary(id: string, title: string): ChatSummary {
  return { id, title, assistantId: "a", lastMessageAt: null, createdAt: "2026-01-01T00:00:00+00:00", status: "ACTIVE" };
}

/** A server whose `chats` answer the test sets; counts the requests. */
function server(): { client: ChatqlClient; chats: ChatSummary[]; requests: number } {
  const state = { chats: [] as ChatSummary[], requests: 0, client: null as unknown as ChatqlClient };
  state.client = new ChatqlClient({
    url: "http://chatql.test/graphql",
    fetch: async () => {
      state.requests += 1;
      const data = { chats: { pageInfo: { hasNextPage: false, endCursor: null },
        groups: [{ key: "today", label: "Today", totalCount: state.chats.length, chats: [...state.chats] }] } };
      return new Response(JSON.stringify({ data }), { headers: { "content-type": "application/json" } });
    },
  });
  return state;
}

const titles = (store: ChatListStore) => store.getState().groups.flatMap((g) => g.chats.map((c) => c.title));
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("ChatListStore.live", () => {
  it("new messages in the chat first in Today swap its summary in without a refetch", async () => {
    const api = server();
    api.chats = [summary("c1", "Newest"), summary("c2", "Older")];
    const store = new ChatListStore(api.client);
    await store.loadMore();
    const events = new FakeEvents();
    store.live(events);
    const before = api.requests;
    events.emit("MESSAGES", "c1", { ...summary("c1", "Newest"), lastMessageAt: "2026-01-01T00:00:05+00:00" });
    for (let i = 0; i < 4; i += 1) await settle();
    expect(api.requests).toBe(before);
    expect(store.getState().groups[0]?.chats.map((c) => [c.id, c.lastMessageAt])).toEqual([
      ["c1", "2026-01-01T00:00:05+00:00"], ["c2", null]]);
    // Another chat's messages may move it: the first page is fetched again.
    api.chats = [summary("c2", "Older"), summary("c1", "Newest")];
    events.emit("MESSAGES", "c2", summary("c2", "Older"));
    for (let i = 0; i < 4; i += 1) await settle();
    expect(api.requests).toBe(before + 1);
    expect(titles(store)).toEqual(["Older", "Newest"]);
  });

  it("follows chatEvents with the list's filter instead of polling", async () => {
    const api = server();
    api.chats = [summary("c1", "Plans")];
    const store = new ChatListStore(api.client, { keywords: " plan " });
    await store.loadMore();
    const events = new FakeEvents();
    const stop = store.live(events);
    expect(events.filter).toEqual({ keywords: "plan" });
    expect(titles(store)).toEqual(["Plans"]);

    // A new chat: the first page is fetched again and swapped in, never emptied.
    api.chats = [summary("c2", "Plan B"), summary("c1", "Plans")];
    events.emit("CREATED", "c2", summary("c2", "Plan B"));
    expect(titles(store)).toEqual(["Plans"]);
    await settle();
    await settle();
    expect(titles(store)).toEqual(["Plan B", "Plans"]);

    // Several events at once: one refetch after the one running.
    const before = api.requests;
    events.emit("MESSAGES", "c1");
    events.emit("UPDATED", "c2");
    events.emit("MESSAGES", "c2");
    for (let i = 0; i < 6; i += 1) await settle();
    expect(api.requests - before).toBe(2);

    // Typing, then gone: dropped at once, without a request.
    events.emit("STREAM_STARTED", "c1");
    expect(store.getState().typing).toEqual(["c1"]);
    events.emit("STREAM_ENDED", "c1");
    expect(store.getState().typing).toEqual([]);
    const requests = api.requests;
    events.emit("STREAM_STARTED", "c2");
    events.emit("DELETED", "c2");
    expect(titles(store)).toEqual(["Plans"]);
    expect(store.getState().typing).toEqual([]);
    events.emit("PURGED", "c1");
    expect(store.getState().groups).toEqual([]);
    expect(api.requests).toBe(requests);

    // RESYNC: fetch the list again.
    api.chats = [summary("c3", "Plan C")];
    events.emit("RESYNC", "");
    for (let i = 0; i < 4; i += 1) await settle();
    expect(titles(store)).toEqual(["Plan C"]);

    stop();
    expect(events.stopped).toBe(true);
  });
});
