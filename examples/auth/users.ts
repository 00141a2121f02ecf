import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import type { ScryptOptions } from 'node:crypto'

/** A password as kept in memory: scrypt's output and its salt, never the password itself. */
export interface PasswordHash {
  readonly salt: Buffer
  readonly hash: Buffer
}

// Node's defaults (N = 2^14, r = 8, p = 1): about 16 MiB and a few tens of milliseconds per attempt.
const cost: ScryptOptions = { N: 16384, r: 8, p: 1 }
const keyLength = 64

function derive (password: string, salt: Buffer): Promise<Buffer> {
  // The async form runs on libuv's thread pool, so a login does not block other requests.
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, keyLength, cost, (error, key) => { if (error === null) resolve(key); else reject(error) })
  })
}

/** Hashes a password with a fresh random salt. */
export async function hashPassword (password: string): Promise<PasswordHash> {
  const salt = randomBytes(16)
  return { salt, hash: await derive(password, salt) }
}

/** Whether the password matches, compared in constant time. */
export async function verifyPassword (password: string, stored: PasswordHash): Promise<boolean> {
  return timingSafeEqual(await derive(password, stored.salt), stored.hash)
}

/** Compares names in constant time: hashing first gives both sides the same length. */
function sameName (a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest())
}

/** The example's one user. `check` answers the subject of the token to issue, or undefined. */
export interface UserStore {
  check: (username: string, password: string) => Promise<string | undefined>
}

/**
 * A store holding one user, whose password is hashed once here. An unknown name costs the same
 * scrypt run as a wrong password, so the answer time does not tell which names exist.
 */
export async function demoUsers (username: string, password: string): Promise<UserStore> {
  const stored = await hashPassword(password)
  return {
    async check (name, candidate) {
      const known = sameName(name, username)
      const matches = await verifyPassword(candidate, stored)
      return known && matches ? username : undefined
    },
  }
}
