//! Which addresses outbound calls may reach: only public unicast ones.
//! Webhook URLs are checked with it when they are registered (an address
//! literal), and the dispatcher checks the URL's host again at send time,
//! every address a host name resolves to, and the peer address of the
//! connection itself, with the same rule.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The host a URL sends its request to, read with the WHATWG URL rules
/// that the HTTP client (reqwest, through the `url` crate) applies:
/// `0x7f.1`, `2130706433`, `0177.0.0.1` and `%31%32%37.0.0.1` are all the
/// address 127.0.0.1, never a name. Judge a URL's host only through this:
/// any other parser may read the same text as something else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlHost {
    /// A DNS name (lowercase, IDNA-encoded), resolved when used.
    Name(String),
    /// An address literal, connected to without resolving.
    Address(IpAddr),
}

/// The host of `url`, as the HTTP client will use it (None: no host).
pub fn url_host(url: &url::Url) -> Option<UrlHost> {
    Some(match url.host()? {
        url::Host::Domain(name) => UrlHost::Name(name.to_owned()),
        url::Host::Ipv4(ip) => UrlHost::Address(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => UrlHost::Address(IpAddr::V6(ip)),
    })
}

/// Every numeric spelling of a loopback or metadata address the WHATWG
/// rules accept (hex, octal, dotted and undotted, mixed, percent-encoded,
/// IPv4-mapped and -compatible IPv6), for the tests of every place that
/// judges a URL.
pub const NUMERIC_HOST_FORMS: &[(&str, &str)] = &[
    ("0x7f.0x1", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0177.1", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("0x7f.0.0.0x1", "127.0.0.1"),
    ("0x7F.00.0.01", "127.0.0.1"),
    ("%31%32%37.0.0.1", "127.0.0.1"),
    ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
    ("0xa9fea9fe", "169.254.169.254"),
    ("2852039166", "169.254.169.254"),
    ("0251.0376.0251.0376", "169.254.169.254"),
    ("169.254.43518", "169.254.169.254"),
    ("0xa9.254.0251.0xfe", "169.254.169.254"),
    ("10.1", "10.0.0.1"),
    ("0xa.0.0.1", "10.0.0.1"),
    ("0xc0a80001", "192.168.0.1"),
    ("0", "0.0.0.0"),
    ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1"),
    ("[::ffff:7f00:1]", "::ffff:127.0.0.1"),
    ("[::ffff:a9fe:a9fe]", "::ffff:169.254.169.254"),
    ("[::127.0.0.1]", "::127.0.0.1"),
    ("[0:0:0:0:0:ffff:7f00:0001]", "::ffff:127.0.0.1"),
    ("[::1]", "::1"),
];

/// True for a public unicast address: not unspecified, loopback, private,
/// shared (CGNAT), link-local (cloud metadata included), multicast,
/// broadcast, documentation, benchmarking or reserved, in IPv4 or IPv6,
/// with IPv4 addresses carried inside IPv6 (mapped, compatible, NAT64,
/// 6to4) judged as the IPv4 address they carry.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // "this network", unspecified
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 169 && b == 254) // link-local, cloud metadata
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224; // multicast, reserved, broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    // IPv4 inside IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d),
    // NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::).
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    // (::, ::1 and the rest of ::/96's low end carry 0.0.x.x, refused.)
    if segments[..5] == [0; 5] && (segments[5] == 0xffff || segments[5] == 0) {
        return is_public_v4(embedded(segments[6], segments[7]));
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded(segments[6], segments[7]));
    }
    if segments[0] == 0x2002 {
        return is_public_v4(embedded(segments[1], segments[2]));
    }
    let first = segments[0];
    // Global unicast lives in 2000::/3. Outside it, and so refused: unique
    // local (fc00::/7, the metadata service's fd00:ec2::254), link-local
    // (fe80::/10), site-local (fec0::/10), multicast (ff00::/8) and
    // discard-only (100::/64). Inside it, these:
    let refused = match first {
        // Documentation (2001:db8::/32), IETF protocol assignments
        // (2001::/23: Teredo, ORCHID, ...).
        0x2001 => segments[1] == 0x0db8 || segments[1] < 0x0200,
        // Documentation (3fff::/20).
        0x3fff => segments[1] < 0x1000,
        _ => false,
    };
    !refused && (first & 0xe000) == 0x2000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().unwrap())
    }

    #[test]
    fn every_numeric_host_form_is_read_as_the_address_it_spells() {
        for (host, address) in NUMERIC_HOST_FORMS {
            let url = url::Url::parse(&format!("https://{host}/hook")).unwrap();
            let expected: IpAddr = address.parse().unwrap();
            assert_eq!(url_host(&url), Some(UrlHost::Address(expected)), "{host}");
            assert!(!is_public(expected), "{host}");
        }
        let name = url::Url::parse("https://Hooks.Example.COM/x").unwrap();
        assert_eq!(
            url_host(&name),
            Some(UrlHost::Name("hooks.example.com".into()))
        );
    }

    #[test]
    fn public_unicast_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "172.15.255.255",
            // Beside each refused range: its second and third octets
            // under another first, and its first with others.
            "8.64.0.1",
            "169.1.1.1",
            "8.254.1.1",
            "8.20.1.1",
            "8.0.0.1",
            "192.0.1.1",
            "8.88.99.1",
            "192.0.99.1",
            "192.88.98.1",
            "8.18.1.1",
            "198.20.0.1",
            "8.8.100.1",
            "198.51.101.1",
            "203.0.114.1",
            "8.8.113.1",
            "2606:4700:4700::1111",
            "2a00:1450:4010:c05::8a",
            // Beside the refused ranges inside 2000::/3.
            "2001:200::1",
            "2a00:db8::1",
            "2a00:100::1",
            "3fff:1000::1",
            "::ffff:8.8.8.8",
            "::8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(public(ip), "{ip}");
        }
    }

    #[test]
    fn every_non_public_range_is_refused() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "169.254.0.1",
            "192.0.0.192",
            "192.0.2.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::ffff:203.0.113.5",
            "::1234:808:808",
            "64:ff9b::7f00:1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "100::1",
            "3fff::1",
            "3fff:fff::1",
            "2001:1ff::1",
            "100::1:2",
        ] {
            assert!(!public(ip), "{ip}");
        }
    }
}
