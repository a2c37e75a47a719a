/// The library's version: printed by `--version`, sent as the HTTP `User-Agent` and libpq's
/// `application_name`.
public enum CatalogVersion {
    public static let string = "0.2.0"
}
