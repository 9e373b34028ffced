/** The parts of hpack.js (no bundled types) crishim uses. */
declare module 'hpack.js' {
  export interface Header {
    name: string;
    value: string;
    neverIndex?: boolean;
    huffman?: boolean;
  }
  export interface Codec {
    write(data: Buffer | Header[]): boolean;
    read(): Buffer | Header | null;
  }
  export interface Decompressor extends Codec {
    execute(): void;
  }
  export const compressor: { create(options: { table: { size: number } }): Codec };
  export const decompressor: { create(options: { table: { size: number } }): Decompressor };
}
