import type { ChatqlClient } from "@chatql/client";
import { useEffect, useState } from "react";

import { run } from "../api";
import { ForkSharedChatDocument, SharedChatDocument, type SharedChatQuery } from "../generated/operations";
import { useToast } from "../toast";
import { Button } from "./controls";
import { copyText } from "./Markdown";
import { MessageList } from "./MessageList";
import type { MessageActions, Shown } from "./MessageView";

type Shared = NonNullable<SharedChatQuery["sharedChat"]>;

/**
 * A share link's page (`/s/{token}`): the shared branch of a chat, read-only. A signed-in
 * person may continue it as a chat of their own (a copy of the shared messages).
 */
export function SharedView({ client, token, signedIn }: { client: ChatqlClient; token: string; signedIn: boolean }) {
  const [shared, setShared] = useState<Shared | null | undefined>(undefined);
  const [forking, setForking] = useState(false);
  const toast = useToast();
  const fork = async () => {
    setForking(true);
    try {
      const data = await run(client, ForkSharedChatDocument, { token });
      location.assign(`/?chat=${encodeURIComponent(data.forkChat.id)}`);
    } catch (error) {
      toast.fail(error);
      setForking(false);
    }
  };
  useEffect(() => {
    run(client, SharedChatDocument, { token })
      .then((data) => setShared(data.sharedChat))
      .catch((error: unknown) => {
        setShared(null);
        toast.fail(error);
      });
  }, [client, token, toast]);
  const assistant = shared?.messages.find((message) => message.assistantId)?.assistantId ?? "Assistant";
  const messages: Shown[] = (shared?.messages ?? []).map((message, index, all) => ({
    id: message.id, role: message.role, type: message.type, props: (message.props ?? {}) as Record<string, unknown>,
    blockId: null, threadId: null, status: null, createdAt: message.createdAt, siblings: null, parentId: null,
    answerStart: message.role !== "USER" && all[index - 1]?.role === "USER", feedback: null, files: message.files,
  }));
  const actions: MessageActions = {
    busy: true, assistant, readOnly: true,
    edit: () => Promise.resolve(false), pickVersion: () => undefined, regenerate: () => undefined,
    copy: (text) => void copyText(text, toast.notify), rate: () => undefined, share: () => undefined,
  };
  return (
    <main aria-label="Shared chat" className="flex h-dvh flex-col">
      <header className="flex h-14 shrink-0 items-center gap-3 border-b border-zinc-200 px-4 dark:border-zinc-800">
        <h1 className="min-w-0 flex-1 truncate text-base font-semibold">{shared === null ? "Link not found" : shared?.title || "Shared chat"}</h1>
        {shared && signedIn && (
          <Button look="primary" disabled={forking} onClick={() => void fork()}>Continue this chat</Button>
        )}
        <a href="/" className="text-sm text-blue-700 underline underline-offset-2 dark:text-blue-300">Open chatql</a>
      </header>
      <div role="log" aria-label="Messages" tabIndex={0} className="min-h-0 flex-1 overflow-y-auto focus-visible:outline-none">
        <div className="mx-auto flex w-full max-w-3xl flex-col gap-5 px-4 py-6">
          {shared === undefined && <p className="text-center text-sm text-zinc-600 dark:text-zinc-400">Loading…</p>}
          {shared === null && <p className="text-center">This link does not exist or was revoked.</p>}
          {shared && <p className="text-center text-xs text-zinc-600 dark:text-zinc-400">A read-only copy of a conversation.</p>}
          <MessageList messages={messages} actions={actions} focusId={null} />
        </div>
      </div>
    </main>
  );
}
