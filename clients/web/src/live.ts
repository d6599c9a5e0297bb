/**
 * The open chat's live stream as the page draws it. A stream that has started but has
 * nothing to show yet (no message, no question riding in `stream_start`) is drawn as
 * started only with its first message, or after `QUIET_START_MS` when none comes: an
 * agent that starts a stream and says its first words at once is drawn once, with those
 * words — not first as an empty answer (a render, a layout and a paint of the Stop button
 * and the message actions turning busy) while its first words wait behind that frame.
 */
import type { ChatqlClient, FollowerState, StreamFollower } from "@chatql/client";
import { useEffect, useMemo, useSyncExternalStore } from "react";

/** How long a stream that started without a word may wait to be drawn as started. */
export const QUIET_START_MS = 100;

/** A follower's states as shown: each as it comes, but a word-less start held back for a moment. */
export class ShownStream {
  private shown: FollowerState | null = null;
  // The stream whose word-less start has waited long enough.
  private released: string | null = null;

  constructor(readonly follower: StreamFollower, private readonly quietMs = QUIET_START_MS) {}

  readonly subscribe = (listener: () => void): (() => void) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The stream whose start waits (a new one's start replaces an earlier one's wait).
    let waiting: string | null = null;
    const stop = this.follower.subscribe((state) => {
      if (this.holds(state) && waiting !== state.streamId) {
        clearTimeout(timer);
        const streamId = waiting = state.streamId;
        timer = setTimeout(() => {
          waiting = null;
          this.released = streamId;
          listener();
        }, this.quietMs);
      }
      listener();
    });
    return () => {
      clearTimeout(timer);
      stop();
    };
  };

  readonly getSnapshot = (): FollowerState => {
    const state = this.follower.getState();
    if (this.shown !== null && this.holds(state)) return this.shown;
    this.shown = state;
    return state;
  };

  /** Whether `state` is a stream that just started with nothing to show yet. */
  private holds(state: FollowerState): boolean {
    return state.status === "live" && state.messages.size === 0 && state.input === null
      && state.streamId !== this.released && this.shown?.streamId !== state.streamId;
  }
}

/** The chat's live stream, followed while mounted, as the page draws it (see `ShownStream`). */
export function useShownStream(client: ChatqlClient, chatId: string): FollowerState {
  const shown = useMemo(() => new ShownStream(client.follow(chatId)), [client, chatId]);
  useEffect(() => {
    shown.follower.start();
    return () => shown.follower.stop();
  }, [shown]);
  return useSyncExternalStore(shown.subscribe, shown.getSnapshot);
}
