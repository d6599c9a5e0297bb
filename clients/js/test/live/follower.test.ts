// The follower over a real graphql-ws socket that is cut mid-stream ends with exactly the
// persisted messages: nothing twice, nothing missing.
import { expect, it } from "vitest";
import WebSocket from "ws";

import { ChatqlClient } from "../../src/client.js";
import { AGENT, base, endStream, push, startStream, text, until } from "./helpers.js";

const sockets: WebSocket[] = [];

class TrackedWebSocket extends WebSocket {
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols);
    sockets.push(this);
  }
}

it("a follower whose socket is cut resumes with afterSeq and shows exactly the persisted messages", async () => {
  const chatId = `follow-${Date.now()}`;
  const streamId = await startStream(chatId);
  const client = new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: TrackedWebSocket });
  await push(streamId, [text("t", "one "), text("c", "", { type: "tool_call", deltaPath: "arguments", props: { arguments: "{" } })]);
  const follower = client.follow(chatId, { initialBackoffMs: 50 });
  follower.start();
  // Joined mid-stream: a snapshot of both messages.
  await until(() => follower.getState().messages.size === 2, "the late-join snapshot");
  await push(streamId, [text("t", "two ")]);
  await until(() => follower.getState().seq === 4, "seq 4");
  // Cut the socket, keep producing while it is down.
  const socket = sockets[sockets.length - 1] as WebSocket;
  socket.terminate();
  await until(() => !follower.getState().connected, "the drop to be noticed");
  await push(streamId, [text("t", "three "), text("c", "", { type: "tool_call", deltaPath: "arguments", props: { arguments: "}" } })]);
  await until(() => follower.getState().seq === 6 && follower.getState().connected, "the resumed stream");
  expect(sockets.length).toBeGreaterThanOrEqual(2);
  const persisted = await endStream(streamId);
  await until(() => follower.getState().status === "completed", "stream_end");
  const shown = [...follower.getState().messages.values()].map((m) => ({ id: m.id, type: m.type, props: m.props }));
  expect(shown).toEqual(persisted);
  expect(persisted.find((m) => m.type === "text")?.props).toEqual({ content: "one two three " });
  follower.stop();
  await client.reset();
});
