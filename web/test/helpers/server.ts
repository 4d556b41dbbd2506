// Scripted stand-ins for a room server (a `ws` WebSocketServer) and the
// join API (node:http), on loopback ports the OS picks. Tests drive them
// message by message: each connection queues what the client sent, and
// the test answers as the real server would.

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Envelope } from '../../src/protocol.js';

/** A queue whose takers wait for the next item. */
class Queue<T> {
  private readonly items: T[] = [];
  private readonly takers: ((item: T) => void)[] = [];

  put(item: T): void {
    const taker = this.takers.shift();
    if (taker !== undefined) taker(item);
    else this.items.push(item);
  }

  take(): Promise<T> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => this.takers.push(resolve));
  }

  get size(): number {
    return this.items.length;
  }
}

/** A frame the client sent: a JSON envelope or a binary frame. */
export type Frame = { text: Envelope; binary?: undefined } | { binary: Uint8Array; text?: undefined };

/** One client connection, as the server sees it. */
export class Connection {
  readonly protocols: string[];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly frames = new Queue<Frame>();

  constructor(
    readonly ws: WebSocket,
    request: IncomingMessage,
  ) {
    this.protocols = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      this.frames.put(isBinary ? { binary: new Uint8Array(data) } : { text: JSON.parse(data.toString()) as Envelope });
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** The next frame the client sent. */
  next(): Promise<Frame> {
    return this.frames.take();
  }

  /** The next JSON message, which must be one. */
  async nextText(): Promise<Envelope> {
    const f = await this.next();
    if (f.text === undefined) throw new Error('the client sent a binary frame where a JSON message was expected');
    return f.text;
  }

  /** The next binary frame, which must be one. */
  async nextBinary(): Promise<Uint8Array> {
    const f = await this.next();
    if (f.binary === undefined) throw new Error(`the client sent ${JSON.stringify(f.text)} where a binary frame was expected`);
    return f.binary;
  }

  /** Frames received and not taken yet. */
  get unread(): number {
    return this.frames.size;
  }

  sendJSON(kind: string, payload: unknown, seq?: number): void {
    this.ws.send(JSON.stringify({ v: 1, kind, seq, payload }));
  }

  sendBinary(data: Uint8Array): void {
    this.ws.send(data, { binary: true });
  }

  close(code: number, reason = ''): void {
    this.ws.close(code, reason);
  }
}

/** A scripted room server: every connection lands in a queue. */
export class RoomServer {
  readonly url: string;
  /** Set: upgrades are answered with this HTTP status instead (as a proxy in front of a pod that is gone would). */
  refuseWith?: number;
  /** Upgrades answered with refuseWith. */
  refused = 0;
  private readonly connections = new Queue<Connection>();

  private constructor(private readonly wss: WebSocketServer) {
    const { port } = wss.address() as AddressInfo;
    this.url = `ws://127.0.0.1:${port}/ws`;
    wss.on('connection', (ws, request) => this.connections.put(new Connection(ws, request)));
  }

  static start(): Promise<RoomServer> {
    return new Promise((resolve, reject) => {
      let server: RoomServer | undefined;
      const wss = new WebSocketServer({
        host: '127.0.0.1',
        port: 0,
        path: '/ws',
        // Like the room server: only roomkeeper.v1 is spoken.
        handleProtocols: (protocols) => (protocols.has('roomkeeper.v1') ? 'roomkeeper.v1' : false),
        verifyClient: (_info, done) => {
          const status = server?.refuseWith;
          if (server !== undefined && status !== undefined) server.refused++;
          done(status === undefined, status);
        },
      });
      wss.once('listening', () => {
        server = new RoomServer(wss);
        resolve(server);
      });
      wss.once('error', reject);
    });
  }

  /** The next connection a client opened. */
  nextConnection(): Promise<Connection> {
    return this.connections.take();
  }

  /** Stops listening and drops every connection. */
  stop(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    return new Promise((resolve) => this.wss.close(() => resolve()));
  }
}

export interface JoinCall {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/** The join API: answers each call with what answer() returns for it. */
export class JoinServer {
  readonly url: string;
  readonly calls: JoinCall[] = [];

  private constructor(
    private readonly server: Server,
    public answer: (call: JoinCall) => { status: number; body: unknown; headers?: Record<string, string> },
  ) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
  }

  /** A join API whose joins send clients to endpoint with ticket. */
  static async start(endpoint: string, ticket = 'ticket-1'): Promise<JoinServer> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const api = new JoinServer(server, () => ({
      status: 200,
      body: { endpoint, map: 'town', ticket, expiresAt: '2030-01-01T00:00:00Z' },
    }));
    server.on('request', (req, res) => {
      let data = '';
      req.on('data', (chunk: Buffer) => (data += chunk.toString()));
      req.on('end', () => {
        const call = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: data ? (JSON.parse(data) as unknown) : undefined };
        api.calls.push(call);
        const a = api.answer(call);
        res.writeHead(a.status, { 'Content-Type': 'application/json', ...a.headers });
        res.end(JSON.stringify(a.body));
      });
    });
    return api;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
