import { describe, expect, it } from "vitest";

import {
  StreamError,
  StreamFollower,
  type StreamChunk,
  type StreamSink,
  type StreamSource,
} from "../src/follower.js";

/** A source whose subscriptions the test drives by hand. */
class FakeSource implements StreamSource {
  calls: { afterSeq: number | null; sink: StreamSink; cancelled: boolean }[] = [];

  subscribe(_chatId: string, afterSeq: number | null, sink: StreamSink): () => void {
    const call = { afterSeq, sink, cancelled: false };
    this.calls.push(call);
    return () => {
      call.cancelled = true;
    };
  }

  get last() {
    const call = this.calls[this.calls.length - 1];
    if (!call) throw new Error("no subscription");
    return call;
  }
}

/** Timers run when the test says so. */
class Clock {
  pending: { callback: () => void; ms: number }[] = [];
  setTimeout = (callback: () => void, ms: number) => {
    const entry = { callback, ms };
    this.pending.push(entry);
    return entry;
  };
  clearTimeout = (handle: unknown) => {
    this.pending = this.pending.filter((entry) => entry !== handle);
  };
  runAll() {
    const due = this.pending;
    this.pending = [];
    for (const entry of due) entry.callback();
  }
}

function chunk(seq: number, fields: Partial<StreamChunk> = {}): StreamChunk {
  return {
    streamId: "s1", seq, fromSeq: seq, snapshot: false, chunkId: `s1.${seq}`, messageId: "m1",
    blockId: null, threadId: null, type: "text", role: "ASSISTANT", props: { content: `${seq};` },
    delta: true, deltaPath: null, deltaAction: "append", ...fields,
  };
}

const start = (seq = 1): StreamChunk =>
  chunk(seq, { type: "event", messageId: null, delta: false, props: { event: "stream_start", requestId: "r1", input: { id: "u1", role: "USER", type: "user_input", props: { content: "hi" } } } });

function content(follower: StreamFollower): unknown {
  return follower.getState().messages.get("m1")?.props.content;
}

function setup() {
  const source = new FakeSource();
  const clock = new Clock();
  const follower = new StreamFollower("chat", source, {
    setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, initialBackoffMs: 100, maxBackoffMs: 400,
  });
  follower.start();
  return { source, clock, follower };
}

describe("StreamFollower", () => {
  it("applies chunks in order and records the stream's status", () => {
    const { source, follower } = setup();
    expect(source.last.afterSeq).toBeNull();
    source.last.sink.next(start());
    source.last.sink.next(chunk(2));
    source.last.sink.next(chunk(3));
    expect(content(follower)).toBe("2;3;");
    expect(follower.getState()).toMatchObject({ streamId: "s1", seq: 3, status: "live", requestId: "r1" });
    expect(follower.getState().input).toEqual({
      id: "u1", type: "user_input", role: "USER", props: { content: "hi" }, blockId: null, threadId: null,
    });
    source.last.sink.next(chunk(4, { type: "event", messageId: null, delta: false, props: { event: "stream_end", status: "interrupted" } }));
    expect(follower.getState().status).toBe("interrupted");
  });

  it("accepts a merged chunk whose fromSeq continues the sequence", () => {
    const { source, follower } = setup();
    source.last.sink.next(start());
    source.last.sink.next(chunk(5, { fromSeq: 2, props: { content: "merged;" } }));
    source.last.sink.next(chunk(6));
    expect(content(follower)).toBe("merged;6;");
    expect(source.calls).toHaveLength(1);
  });

  it("re-subscribes with afterSeq on a gap and skips what it already applied", () => {
    const { source, clock, follower } = setup();
    source.last.sink.next(start());
    source.last.sink.next(chunk(2));
    source.last.sink.next(chunk(4)); // seq 3 is missing
    expect(source.calls[0]?.cancelled).toBe(true);
    expect(follower.getState().connected).toBe(false);
    clock.runAll();
    expect(source.last.afterSeq).toBe(2);
    source.last.sink.next(chunk(2)); // a replayed chunk is skipped
    source.last.sink.next(chunk(3));
    source.last.sink.next(chunk(4));
    expect(content(follower)).toBe("2;3;4;");
  });

  it("ignores a cancelled subscription's late chunks", () => {
    const { source, clock, follower } = setup();
    source.last.sink.next(start());
    source.last.sink.next(chunk(3));
    const stale = source.calls[0] as (typeof source.calls)[number];
    clock.runAll();
    stale.sink.next(chunk(2));
    expect(follower.getState().messages.size).toBe(0);
  });

  it("survives a dropped socket with growing backoff and resumes after the last seq", () => {
    const { source, clock, follower } = setup();
    source.last.sink.next(start());
    source.last.sink.next(chunk(2));
    source.last.sink.error(new Error("socket closed"));
    expect(clock.pending.map((p) => p.ms)).toEqual([100]);
    clock.runAll();
    source.last.sink.error(new Error("still down"));
    expect(clock.pending.map((p) => p.ms)).toEqual([200]);
    clock.runAll();
    source.last.sink.complete();
    expect(clock.pending.map((p) => p.ms)).toEqual([400]);
    clock.runAll();
    source.last.sink.error(new Error("down"));
    expect(clock.pending.map((p) => p.ms)).toEqual([400]); // capped
    clock.runAll();
    expect(source.last.afterSeq).toBe(2);
    source.last.sink.next(chunk(3));
    expect(content(follower)).toBe("2;3;");
    source.last.sink.error(new Error("again"));
    expect(clock.pending.map((p) => p.ms)).toEqual([100]); // reset by the chunk
  });

  it("applies a snapshot: it replaces the message and sets the position", () => {
    const { source, follower } = setup();
    source.last.sink.next(start());
    source.last.sink.next(chunk(9, { fromSeq: 1, snapshot: true, delta: false, deltaAction: null, props: { content: "so far" } }));
    expect(content(follower)).toBe("so far");
    source.last.sink.next(chunk(10));
    expect(content(follower)).toBe("so far10;");
    expect(follower.getState().seq).toBe(10);
  });

  it("starts over on a new stream", () => {
    const { source, follower } = setup();
    source.last.sink.next(start());
    source.last.sink.next(chunk(2));
    source.last.sink.next({ ...start(), streamId: "s2" });
    expect(follower.getState()).toMatchObject({ streamId: "s2", seq: 1 });
    expect(follower.getState().messages.size).toBe(0);
  });

  it("stops on an error the service will repeat", () => {
    const { source, clock, follower } = setup();
    source.last.sink.error(new StreamError("chat not found", [{ message: "chat not found", extensions: { code: "NOT_FOUND" } }]));
    expect(follower.getState().error?.code).toBe("NOT_FOUND");
    expect(clock.pending).toHaveLength(0);
  });

  it("stop() cancels the subscription and any retry", () => {
    const { source, clock, follower } = setup();
    source.last.sink.error(new Error("down"));
    follower.stop();
    expect(clock.pending).toHaveLength(0);
    expect(source.calls).toHaveLength(1);
  });
});
