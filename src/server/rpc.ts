import type { MethodDefinition } from '@grpc/proto-loader';
import type { Logger } from '../logging/logger';
import type { RuntimeServiceDefinition } from '../generated/runtime/v1/RuntimeService';
import type { ImageServiceDefinition } from '../generated/runtime/v1/ImageService';

/** What every handler gets besides its request. */
export interface CallContext {
  /** Aborted when the client cancels or the call's deadline passes. */
  readonly signal: AbortSignal;
  /** Full method name, e.g. `RunPodSandbox`. */
  readonly method: string;
  /** Logger for this call; `annotate` adds fields (pod/container id) to it and to the RPC's summary line. */
  log: Logger;
  annotate(fields: Record<string, string>): void;
}

export type UnaryImpl<Req, Res> = (req: Req, ctx: CallContext) => Promise<Res>;
/** Server-streaming handlers call `send` for every message and resolve when the stream is done. */
export type StreamImpl<Req, Res> = (req: Req, ctx: CallContext, send: (res: Res) => Promise<void>) => Promise<void>;

/** Methods whose responses are a server stream (the rest are unary). */
export const STREAMING_METHODS = [
  'GetContainerEvents',
  'StreamPodSandboxes',
  'StreamContainers',
  'StreamContainerStats',
  'StreamPodSandboxStats',
  'StreamPodSandboxMetrics',
  'StreamImages',
] as const;
export type StreamingMethod = (typeof STREAMING_METHODS)[number];

type ImplOf<K, M> =
  M extends MethodDefinition<infer _Req, infer Res, infer ReqOut, infer _ResOut>
    ? K extends StreamingMethod
      ? StreamImpl<ReqOut, Res>
      : UnaryImpl<ReqOut, Res>
    : never;

// the `as` clause drops the generated interfaces' string index signature, keeping the named methods
export type ServiceImpl<D> = { [K in keyof D as string extends K ? never : K]?: ImplOf<K, D[K]> };
export type RuntimeImpl = ServiceImpl<RuntimeServiceDefinition>;
export type ImageImpl = ServiceImpl<ImageServiceDefinition>;

/** Request type of a method, for handlers written in their own module. */
export type RequestOf<D, K extends keyof D> =
  D[K] extends MethodDefinition<infer _Req, infer _Res, infer ReqOut, infer _ResOut> ? ReqOut : never;
export type ResponseOf<D, K extends keyof D> =
  D[K] extends MethodDefinition<infer _Req, infer Res, infer _ReqOut, infer _ResOut> ? Res : never;
export type RuntimeReq<K extends keyof RuntimeServiceDefinition> = RequestOf<RuntimeServiceDefinition, K>;
export type RuntimeRes<K extends keyof RuntimeServiceDefinition> = ResponseOf<RuntimeServiceDefinition, K>;
export type ImageReq<K extends keyof ImageServiceDefinition> = RequestOf<ImageServiceDefinition, K>;
export type ImageRes<K extends keyof ImageServiceDefinition> = ResponseOf<ImageServiceDefinition, K>;
