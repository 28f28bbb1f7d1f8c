"""The HTTP side of the runner: an httpx async client, SSE events (httpx-sse) and token counting.

Tokens are counted from the server's running count where it sends one: vLLM's (and
SGLang's) continuous_usage_stats put completion_tokens in every chunk, llama.cpp's
timings_per_token puts predicted_n there, so speculative decoding's several tokens per chunk
count right. A server with neither has each text chunk counted as one token and the
difference settled by its final usage report; `Trace.counted_by` says which way was used.

Nothing a server sends can hang the runner or fill its memory: every answer that is not a
token stream is bounded in time and size as a whole (http_client.py), a stream by its
events, its bytes and the stall timeout (stream.py), and a count that is no count fails the
request (trace.py). What went wrong is said in one line (failures.py); servers' certificates
are checked against one shared context (tls.py).
"""

from runner.client.failures import UntrustedCertificate
from runner.client.http_client import Client, server_root
from runner.client.trace import Trace

__all__ = ["Client", "Trace", "UntrustedCertificate", "server_root"]
