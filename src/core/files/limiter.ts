/**
 * Bounds concurrent work (image resizes): at most `max` run, at most `maxQueue` wait, and the
 * rest are refused at once with 503 so a burst cannot pile up decoders and exhaust memory.
 */
import { AppError } from "../errors";

export class Limiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly max: number, readonly maxQueue: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) {
      if (this.waiting.length >= this.maxQueue) {
        throw new AppError(503, "SERVICE_UNAVAILABLE", "too many images are being resized; retry shortly", { retryAfter: 1 });
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await fn();
    } finally {
      // Hand the slot straight to the next waiter, so `running` never drops below the real count.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }
}
