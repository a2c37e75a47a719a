/// One landmark as stored: the fields of Apple's `landmarkData.json` plus the keys this catalog did not
/// recognise (kept, and written back on output). `Codable` in the `landmarkData.json` shape: see
/// `App/ModelCoding.swift`.
public struct Landmark: Sendable, Hashable, Identifiable {
    /// The record's `id`: the key of upserts and merges (names may repeat).
    public var id: Int64
    /// Never empty.
    public var name: String
    public var category: String?
    public var city: String?
    public var state: String?
    public var park: String?
    public var description: String?
    public var imageName: String?
    /// On the carousel (the featured pages, in id order).
    public var isFeatured: Bool
    public var isFavorite: Bool
    /// Degrees, −90…90 (WGS 84, as in the tutorial's data).
    public var latitude: Double
    /// Degrees, −180…180.
    public var longitude: Double
    /// Unknown keys, as a compact JSON object text in file order (`{"url":"…"}`), or nil.
    public var extraJSON: String?

    public init(
        id: Int64, name: String, category: String? = nil, city: String? = nil, state: String? = nil,
        park: String? = nil, description: String? = nil, imageName: String? = nil,
        isFeatured: Bool = false, isFavorite: Bool = false, latitude: Double, longitude: Double,
        extraJSON: String? = nil
    ) {
        self.id = id
        self.name = name
        self.category = category
        self.city = city
        self.state = state
        self.park = park
        self.description = description
        self.imageName = imageName
        self.isFeatured = isFeatured
        self.isFavorite = isFavorite
        self.latitude = latitude
        self.longitude = longitude
        self.extraJSON = extraJSON
    }

    /// The string property stored in text column `column`.
    func text(_ column: LandmarkColumn) -> String? {
        switch column {
        case .name: return name
        case .category: return category
        case .city: return city
        case .state: return state
        case .park: return park
        case .description: return description
        case .imageName: return imageName
        default: preconditionFailure("\(column) is not a text column")
        }
    }

    /// The landmark in the current row of `s`, which selects `LandmarkColumn.selectList`.
    init(row s: Statement) {
        self.init(
            id: s.int(LandmarkColumn.id), name: s.text(LandmarkColumn.name) ?? "", category: s.text(LandmarkColumn.category),
            city: s.text(LandmarkColumn.city), state: s.text(LandmarkColumn.state), park: s.text(LandmarkColumn.park),
            description: s.text(LandmarkColumn.description), imageName: s.text(LandmarkColumn.imageName),
            isFeatured: s.bool(LandmarkColumn.isFeatured), isFavorite: s.bool(LandmarkColumn.isFavorite),
            latitude: s.double(LandmarkColumn.latitude), longitude: s.double(LandmarkColumn.longitude),
            extraJSON: s.text(LandmarkColumn.extra))
    }
}
