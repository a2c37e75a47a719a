import LandmarkCatalog
import LandmarkCatalogSync

/// `catalog status` for PostgreSQL hubs (docs/hub.md §11): per hub, the last push and pull, the cursors, and
/// the hub's state digest beside this node's.
extension CatalogCLI {
    /// The `hubs` member of `status --json`: one object per hub, by source; `remotes` (source key → name)
    /// names a saved remote's hub.
    static func hubStatusJSON(_ hubs: [HubStatus], local: StateDigest, remotes: [String: String] = [:]) -> [JSONObject] {
        hubs.map { hub in
            // This node's digest at the horizon the hub's was computed at (docs/erasure.md §5).
            let local = hub.digest ?? local
            var o = JSONObject()
            o.set("digest", local.hex)
            o.set("digestRows", local.rows)
            o.set("digestHorizon", hub.hubDigest == nil ? nil : Timestamp.format(milliseconds: hub.horizonMilliseconds))
            o.set("error", hub.error?.message)
            o.set("hubDigest", hub.hubDigest?.hex)
            o.set("hubDigestRows", hub.hubDigest?.rows)
            o.set("hubId", hub.hubID)
            o.set("inAgreement", hub.hubDigest.map { $0 == local })
            o.set("lastPullAt", hub.lastPullAt)
            o.set("lastPushAt", hub.lastPushAt)
            o.set("pullThrough", hub.pullThrough)
            o.set("pushThrough", hub.pushThrough)
            o.set("remote", remotes[hub.source])
            o.set("source", hub.source)
            return o
        }
    }

    /// The hub lines of `status`: two per hub, a saved remote's named beside its URL.
    static func hubStatusText(_ hubs: [HubStatus], local: StateDigest, remotes: [String: String] = [:]) -> String {
        var out = ""
        for hub in hubs {
            out +=
                "hub:         \(sourceLabel(hub.source, remotes)) last push \(hub.lastPushAt ?? "never") (through change \(hub.pushThrough.map(String.init) ?? "-")), "
            out += "last pull \(hub.lastPullAt ?? "never") (through hub change \(hub.pullThrough.map(String.init) ?? "-"))\n"
            if let digest = hub.hubDigest {
                let local = hub.digest ?? local
                out += "hub digest:  \(digest)\(digest == local ? ", the same as here" : ", differs from here (\(local))")"
                out += hub.horizonMilliseconds > 0 ? " at horizon \(Timestamp.format(milliseconds: hub.horizonMilliseconds))\n" : "\n"
            } else {
                out += "hub digest:  unknown: \(hub.error?.message ?? "not read")\n"
            }
        }
        return out
    }
}
