// A sliding-window rate of bytes, for the client's bytesPerSecond: recent
// traffic, not the average since connecting.

export class RateMeter {
  private readonly samples: { time: number; bytes: number }[] = [];
  private sum = 0;

  constructor(readonly windowMs = 2000) {}

  add(timeMs: number, bytes: number): void {
    this.samples.push({ time: timeMs, bytes });
    this.sum += bytes;
    this.expire(timeMs);
  }

  /** Bytes per second over the window that ends at timeMs. */
  rate(timeMs: number): number {
    this.expire(timeMs);
    return (this.sum * 1000) / this.windowMs;
  }

  private expire(timeMs: number): void {
    for (let s = this.samples[0]; s !== undefined && s.time <= timeMs - this.windowMs; s = this.samples[0]) {
      this.sum -= s.bytes;
      this.samples.shift();
    }
  }
}
