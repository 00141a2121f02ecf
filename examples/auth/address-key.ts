import { isIPv4, isIPv6 } from 'node:net'

/** The 16-bit groups of a valid IPv6 address (zone id dropped, an embedded IPv4 tail turned into two groups). */
function ipv6Groups (address: string): number[] {
  let text = address.split('%', 1)[0] ?? ''
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (tail !== null) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const groupsOf = (part: string | undefined) => (part === undefined || part === '' ? [] : part.split(':'))
  // isIPv6 has checked the text: at most one `::`, which stands for as many zero groups as are missing.
  const [head, rest] = text.split('::') as [string, string | undefined]
  const left = groupsOf(head)
  const right = groupsOf(rest)
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0')
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16))
}

/**
 * The key the per-address login limit counts under: an IPv4 address as it is, an IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`) as its IPv4 address, and any other IPv6 address as its /64 (`2001:db8:0:1::/64`). One
 * subscriber usually gets a whole /64 (RFC 6177), so counting single IPv6 addresses would give a client 2^64
 * counters. Anything else (no address, a Unix socket) is its own key.
 *
 * Hand-written over node:net's checks: the one library that does it (ipaddr.js) is only a transitive
 * dependency here, and the expansion is the few lines above.
 *
 * @example
 * addressKey('2001:db8::1')      // '2001:db8:0:0::/64'
 * addressKey('::ffff:10.0.0.1')  // '10.0.0.1'
 * addressKey('10.0.0.1')         // '10.0.0.1'
 */
export function addressKey (address: string | undefined): string {
  if (address === undefined || isIPv4(address)) return address ?? ''
  if (!isIPv6(address)) return address
  const groups = ipv6Groups(address)
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff
  if (mapped) {
    const [high = 0, low = 0] = groups.slice(6)
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')
  }
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`
}
