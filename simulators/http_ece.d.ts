/** The part of http_ece (no bundled types) the Web Push simulator uses: RFC 8188 decryption. */
declare module 'http_ece' {
  import type { ECDH } from 'node:crypto';

  export interface DecryptParams {
    version?: 'aes128gcm' | 'aesgcm';
    /** The receiver's ECDH key pair; the sender's public key comes from the aes128gcm header. */
    privateKey?: ECDH;
    /** base64url string or bytes. */
    authSecret?: string | Buffer;
  }

  export function decrypt(buffer: Buffer, params: DecryptParams): Buffer;

  const ece: { decrypt: typeof decrypt };
  export default ece;
}
