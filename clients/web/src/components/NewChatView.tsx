import { AppendMessagesDocument, CreateChatDocument, type ChatqlClient } from "@chatql/client";
import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";

import type { FilesConfig } from "../config";
import { composeContent, uploader, writeId, type UploadedFile } from "../api";
import { useToast } from "../toast";
import { Composer } from "./Composer";
import { inputClass } from "./controls";
import type { Shown } from "./MessageView";

const ASSISTANT_KEY = "chatql.assistant";

/**
 * A new chat: the assistant to talk to and the composer. Nothing exists on the server
 * until the first message is sent; sending creates the chat with that message.
 */
export function NewChatView({ client, menu, onStarted, headers, filesConfig }: {
  client: ChatqlClient;
  headers: Readonly<Record<string, string>>;
  /** What files the server takes (its page config). */
  filesConfig: FilesConfig;
  menu: ReactNode;
  onStarted: (chatId: string, message: Shown) => void;
}) {
  const [assistant, setAssistant] = useState(() => localStorage.getItem(ASSISTANT_KEY) ?? "demo");
  const toast = useToast();
  const composer = useRef<HTMLTextAreaElement>(null);
  // The composer takes the focus (again once the drawer it was opened from has closed).
  useEffect(() => {
    const timer = setTimeout(() => composer.current?.focus());
    return () => clearTimeout(timer);
  }, []);
  const upload = useMemo(() => uploader(headers, filesConfig), [headers, filesConfig]);
  const send = async (text: string, files: readonly UploadedFile[]): Promise<boolean> => {
    const content = composeContent(text, files);
    try {
      const assistantId = assistant.trim() || "demo";
      localStorage.setItem(ASSISTANT_KEY, assistantId);
      const created = await client.request(CreateChatDocument, { input: { assistantId } });
      const chatId = created.createChat.id;
      const data = await client.request(AppendMessagesDocument, {
        chatId, appendId: writeId(), messages: [{ role: "USER", type: "user_input", props: { content } }],
      });
      const id = data.appendMessages.messageIds[0] ?? writeId();
      onStarted(chatId, {
        id, type: "user_input", role: "USER", props: { content }, blockId: null, threadId: null, status: null,
        createdAt: new Date().toISOString(), siblings: null, answerStart: false, sending: true, feedback: null,
      });
      return true;
    } catch (error) {
      toast.fail(error);
      return false;
    }
  };
  return (
    <>
      <header className="flex h-14 shrink-0 items-center gap-2 px-3">{menu}</header>
      <div className="flex min-h-0 flex-1 flex-col items-center justify-center gap-6 overflow-y-auto px-4 pb-8">
        <h1 className="text-center text-2xl font-semibold sm:text-3xl">What can I help with?</h1>
        <label className="flex items-center gap-2 text-sm text-zinc-700 dark:text-zinc-300">
          Assistant
          <input value={assistant} onChange={(event) => setAssistant(event.target.value)} size={14}
            className={inputClass} list="chatql-assistants" />
          <datalist id="chatql-assistants"><option value="demo" /></datalist>
        </label>
        <div className="w-full max-w-3xl">
          <Composer ref={composer} streaming={false} stopping={false} onSend={send} onStop={() => undefined} autoFocus
            placeholder="Ask anything" upload={upload} />
        </div>
      </div>
    </>
  );
}
