/** The part of s3rver (an S3-protocol server for tests; it ships no types) that the tests use. */
declare module "s3rver" {
  type Options = { port?: number; address?: string; silent?: boolean; directory: string; configureBuckets?: { name: string }[] };
  export default class S3rver {
    constructor(options: Options);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
