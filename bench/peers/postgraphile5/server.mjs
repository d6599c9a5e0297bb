// PostGraphile 5 for bench.peers: the amber preset over the `public` schema, served by
// grafserv on Node's own HTTP server at http://HOST:PORT/graphql.
//
//     node server.mjs CONNECTION_STRING HOST PORT
//
// Set up like the PostGraphile 4 peer: no default mutations (the benchmark only reads),
// JSON columns as JSON (amber's default), a pool of at most 10 connections, no GraphiQL,
// no query log. Prints "ready" once the schema is built and the server listens.

import { createServer } from "node:http";

import { postgraphile } from "postgraphile";
import { makePgService } from "postgraphile/adaptors/pg";
import { grafserv } from "postgraphile/grafserv/node";
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";

const [connectionString, host, port] = process.argv.slice(2);
if (!connectionString || !host || !port) {
  console.error("usage: node server.mjs CONNECTION_STRING HOST PORT");
  process.exit(2);
}

const preset = {
  extends: [PostGraphileAmberPreset],
  disablePlugins: ["PgMutationCreatePlugin", "PgMutationUpdateDeletePlugin"],
  pgServices: [
    makePgService({ connectionString, schemas: ["public"], poolConfig: { max: 10 } }),
  ],
  grafserv: { graphqlPath: "/graphql", graphiql: false, websockets: false },
  grafast: { explain: false },
};

const pgl = postgraphile(preset);
const serv = pgl.createServ(grafserv);
const server = createServer();
server.on("error", (error) => {
  console.error(error);
  process.exit(1);
});
await serv.addTo(server);
// Build the schema now, so the first request measured does not pay for introspection.
await pgl.getSchema();
server.listen({ host, port: Number(port) }, () => console.log("ready"));

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    server.close();
    pgl.release().finally(() => process.exit(0));
  });
}
