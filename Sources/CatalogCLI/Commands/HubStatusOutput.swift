import LandmarkCatalog
import LandmarkCatalogSync

/// `catalog status` for PostgreSQL hubs (docs/hub.md §11): per hub, the last push and pull, the cursors, and
/// the hub's state digest beside this node's.
extension CatalogCLI {
    /// The `hubs` member of `status --json`: an array, by source, keys sorted; `remotes` (source key →
    /// name) names a saved remote's hub.
    static func hubStatusJSON(_ hubs: [HubStatus], local: StateDigest, remotes: [String: String] = [:]) -> [UInt8] {
        var w = JSONWriter()
        w.raw("[")
        for (n, hub) in hubs.enumerated() {
            if n > 0 { w.raw(",") }
            w.raw("{")
            w.key("digest")
            w.string(local.hex)
            w.raw(",")
            w.key("digestRows")
            w.int(local.rows)
            w.raw(",")
            w.key("error")
            w.string(hub.error?.message)
            w.raw(",")
            w.key("hubDigest")
            w.string(hub.hubDigest?.hex)
            w.raw(",")
            w.key("hubDigestRows")
            w.int(hub.hubDigest?.rows)
            w.raw(",")
            w.key("hubId")
            w.string(hub.hubID)
            w.raw(",")
            w.key("inAgreement")
            if let digest = hub.hubDigest { w.bool(digest == local) } else { w.raw("null") }
            w.raw(",")
            w.key("lastPullAt")
            w.string(hub.lastPullAt)
            w.raw(",")
            w.key("lastPushAt")
            w.string(hub.lastPushAt)
            w.raw(",")
            w.key("pullThrough")
            w.int(hub.pullThrough)
            w.raw(",")
            w.key("pushThrough")
            w.int(hub.pushThrough)
            w.raw(",")
            w.key("remote")
            w.string(remotes[hub.source])
            w.raw(",")
            w.key("source")
            w.string(hub.source)
            w.raw("}")
        }
        w.raw("]")
        return w.bytes
    }

    /// The hub lines of `status`: two per hub, a saved remote's named beside its URL.
    static func hubStatusText(_ hubs: [HubStatus], local: StateDigest, remotes: [String: String] = [:]) -> String {
        var out = ""
        for hub in hubs {
            out +=
                "hub:         \(sourceLabel(hub.source, remotes)) last push \(hub.lastPushAt ?? "never") (through change \(hub.pushThrough.map(String.init) ?? "-")), "
            out += "last pull \(hub.lastPullAt ?? "never") (through hub change \(hub.pullThrough.map(String.init) ?? "-"))\n"
            if let digest = hub.hubDigest {
                out += "hub digest:  \(digest)\(digest == local ? ", the same as here" : ", differs from here (\(local))")\n"
            } else {
                out += "hub digest:  unknown: \(hub.error?.message ?? "not read")\n"
            }
        }
        return out
    }
}
