"""What an operator runs the service with: metrics, traces, the request log, rate limits,
document limits, health checks and persisted queries.

These modules observe and guard requests; they know nothing of the schema's types, so
every layer above may use them.
"""
