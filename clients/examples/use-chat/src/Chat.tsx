import { useChat } from "@ai-sdk/react";
import { StopStreamDocument, type ChatqlClient } from "@chatql/client";
import { ChatqlChatTransport } from "@chatql/client/ai-sdk";
import { DefaultChatTransport, type UIMessage } from "ai";
import { useState } from "react";

interface Props {
  chatId: string;
  client: ChatqlClient;
  headers: Record<string, string>;
  initial: UIMessage[];
  overWebSocket: boolean;
  /** Whether to resume a reply still being written (the chat exists). */
  resume: boolean;
}

export function Chat({ chatId, client, headers, initial, overWebSocket, resume }: Props) {
  const [transport] = useState(() =>
    overWebSocket
      ? new ChatqlChatTransport(client)
      : new DefaultChatTransport({ api: "/ai/chat", headers, body: { assistantId: "demo" } }),
  );
  // resume: after a reload mid-reply, the reply goes on streaming into the page.
  const { messages, sendMessage, status, stop, error } = useChat({ id: chatId, messages: initial, transport, resume });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";
  // The AI SDK's stop() only closes this page's connection; stopStream stops the agent.
  // (ChatqlChatTransport calls it itself when stop() aborts its stream.)
  const onStop = () => {
    void stop();
    if (!overWebSocket) void client.request(StopStreamDocument, { chatId }).catch(() => undefined);
  };

  return (
    <main style={{ maxWidth: 720, margin: "2rem auto", fontFamily: "system-ui" }}>
      <h1>useChat × chatql</h1>
      {messages.map((message) => (
        <article key={message.id} aria-label={message.role}>
          <strong>{message.role === "user" ? "You" : "Agent"}</strong>
          {message.parts.map((part, i) => {
            if (part.type === "text") return <p key={i}>{part.text}</p>;
            if (part.type === "reasoning") return <p key={i}><em>Thinking: {part.text}</em></p>;
            if (part.type.startsWith("tool-") && "toolCallId" in part) {
              return (
                <pre key={i}>
                  {part.type.slice(5)}({JSON.stringify(part.input)}){part.state === "output-available" ? ` → ${JSON.stringify(part.output)}` : " …"}
                </pre>
              );
            }
            if (part.type.startsWith("data-") && "data" in part) return <pre key={i}>{part.type}: {JSON.stringify(part.data)}</pre>;
            return null;
          })}
        </article>
      ))}
      {error && <p role="alert">{error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!input.trim()) return;
          void sendMessage({ text: input });
          setInput("");
        }}
      >
        <input aria-label="Message" value={input} onChange={(event) => setInput(event.target.value)} disabled={busy} />
        {busy ? <button type="button" onClick={onStop}>Stop</button> : <button type="submit">Send</button>}
      </form>
    </main>
  );
}
