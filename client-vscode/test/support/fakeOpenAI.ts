// A tiny OpenAI-compatible server on 127.0.0.1: POST /v1/chat/completions streams a chat
// completion as server-sent events, one chunk per `intervalMs`, so a test can cancel mid-stream
// and see the client close the connection.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeOpenAIOptions {
  /** Text pieces streamed as deltas, in order. */
  chunks: string[];
  intervalMs: number;
}

export interface ReceivedRequest {
  body: Record<string, unknown>;
  headers: http.IncomingHttpHeaders;
}

export class FakeOpenAI {
  readonly requests: ReceivedRequest[] = [];
  /** Chunks written before the client hung up, per request; undefined while still open. */
  readonly closedEarly: number[] = [];
  completed = 0;
  private server: http.Server | undefined;
  private readonly firstChunkWaiters: (() => void)[] = [];
  private readonly closeWaiters: (() => void)[] = [];
  private chunksSent = 0;

  constructor(private readonly opts: FakeOpenAIOptions) {}

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
  }

  /** Resolves once at least one content chunk has been streamed. */
  firstChunk(): Promise<void> {
    if (this.chunksSent > 0) return Promise.resolve();
    return new Promise((resolve) => this.firstChunkWaiters.push(resolve));
  }

  /** Resolves when a client closes a stream before it ended. */
  clientClosed(): Promise<void> {
    if (this.closedEarly.length > 0) return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const body = JSON.parse(raw) as Record<string, unknown>;
    this.requests.push({ body, headers: req.headers });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const model = typeof body.model === 'string' ? body.model : 'fake';
    let sent = 0;
    let closed = false;
    res.on('close', () => {
      if (!res.writableFinished) {
        closed = true;
        this.closedEarly.push(sent);
        for (const w of this.closeWaiters.splice(0)) w();
      }
    });
    const event = (payload: unknown): void => {
      res.write(`data: ${JSON.stringify(payload)}\n\n`);
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null): Record<string, unknown> => ({
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    event(chunk({ role: 'assistant', content: '' }, null));
    for (const piece of this.opts.chunks) {
      await new Promise((r) => setTimeout(r, this.opts.intervalMs));
      if (closed) return;
      event(chunk({ content: piece }, null));
      sent++;
      this.chunksSent++;
      for (const w of this.firstChunkWaiters.splice(0)) w();
    }
    if (closed) return;
    event(chunk({}, 'stop'));
    event({ ...chunk({}, null), choices: [], usage: { prompt_tokens: 100, completion_tokens: sent, total_tokens: 100 + sent } });
    res.end('data: [DONE]\n\n');
    this.completed++;
  }
}
