// Checked by `tsc -p tsconfig.test.json` (never run): the generated documents type their
// variables and results, so a field the schema does not have fails type checking.
import { ChatqlClient } from "../src/client.js";
import { ChatsDocument, MessagesDocument, StartStreamDocument } from "../src/generated/operations.js";

export async function typedOperations(client: ChatqlClient): Promise<void> {
  const chats = await client.request(ChatsDocument, { first: 10 });
  const more: boolean = chats.chats.pageInfo.hasNextPage;
  const title: string | null | undefined = chats.chats.groups[0]?.chats[0]?.title;
  // @ts-expect-error a field that is not selected (or was renamed) is not there
  void chats.chats.groups[0]?.chats[0]?.name;

  const page = await client.request(MessagesDocument, { chatId: "c1", last: 20 });
  const parent: string | null = page.messages.edges[0]?.node.parentId ?? null;
  // @ts-expect-error `sequence` is a number, not a string
  const sequence: string | undefined = page.messages.edges[0]?.node.sequence;

  // @ts-expect-error the variables are checked too: `chatId` is required
  await client.request(MessagesDocument, { last: 20 });
  // @ts-expect-error an input field the schema does not have
  await client.request(StartStreamDocument, { input: { chatId: "c1", request: "r1" } });
  void [more, title, parent, sequence];
}
