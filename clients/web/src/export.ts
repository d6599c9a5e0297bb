/** The chat's JSON Lines export (`GET /chats/{id}/export`, as the person), saved as a file. */
export async function downloadExport(chatId: string, headers: Readonly<Record<string, string>>): Promise<void> {
  const response = await fetch(`/chats/${encodeURIComponent(chatId)}/export`, { headers: { ...headers } });
  if (!response.ok) throw new Error(`Export failed: ${response.status} ${await response.text()}`);
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = url;
  link.download = `chat-${chatId}.jsonl`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
