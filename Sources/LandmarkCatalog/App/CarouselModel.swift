import Foundation
import Observation

/// The model behind the tutorial's `PageView`: the featured landmarks as pages and the user's
/// `currentPage`, kept in step with the catalog both ways (docs/swift-library.md).
///
/// ```swift
/// @State private var model = CarouselModel(catalog: catalog, user: "u-1")
/// PageViewController(pages: model.pages.map(FeatureCard.init), currentPage: $model.currentPage)
/// PageControl(numberOfPages: model.pageCount, currentPage: $model.currentPage)
/// ```
///
/// - Setting ``currentPage`` shows the page at once and writes the position through, anchored to the
///   landmark on that page and HLC-stamped. The first change after a quiet moment is written at once
///   (leading edge), so a swipe reaches the database, and another device, without waiting. Changes that
///   come while a write is in flight, or within ``Configuration/coalescingWindow`` (250 ms)
///   after the last write, are coalesced: the last of them is written when the window after the last
///   change ends (trailing edge), and at most ``Configuration/maximumWriteDelay`` (1 s) after
///   the first of them, so a continuous run of swipes still stores a page every second. The last page set
///   is always the one stored. ``flush()`` sends a pending write now and waits for it.
/// - A newer position for this user from anywhere (another device's page merged by a `catalog sync`, a
///   `catalog position set`) moves ``currentPage``; while a local change is unsent or being written,
///   the local change wins (it is the newer one and will be stored with a newer stamp).
/// - When the featured set changes, the user stays on their landmark; if it is no longer featured the page
///   is clamped into range — resolved exactly as `catalog position get` resolves it (docs/cli.md §4).
/// - Failures (a database missing, closed, busy; an invalid user id) are published in ``lastError``,
///   never trapped; observation is retried with a backoff (0.25 s doubling to 5 s) unless the catalog
///   was closed.
@Observable
@MainActor
public final class CarouselModel {
    /// How the model coalesces the writes of ``currentPage``.
    public struct Configuration: Sendable {
        /// How long after a write a change is held (and how long after the last held change it is written):
        /// 250 ms by default.
        public var coalescingWindow: Duration
        /// How long a held change may wait while changes keep coming: 1 s by default.
        public var maximumWriteDelay: Duration

        /// - Parameters:
        ///   - coalescingWindow: the window after a write within which changes are held, and after the last
        ///     held change before it is written (250 ms).
        ///   - maximumWriteDelay: the longest a held change waits while changes keep coming (1 s).
        public init(coalescingWindow: Duration = .milliseconds(250), maximumWriteDelay: Duration = .seconds(1)) {
            self.coalescingWindow = coalescingWindow
            self.maximumWriteDelay = maximumWriteDelay
        }
    }

    /// The default ``Configuration/coalescingWindow``.
    @available(*, deprecated, message: "use Configuration().coalescingWindow")
    public static let coalescingWindow: Duration = .milliseconds(250)
    /// The default ``Configuration/maximumWriteDelay``.
    @available(*, deprecated, message: "use Configuration().maximumWriteDelay")
    public static let maximumWriteDelay: Duration = .seconds(1)

    /// The catalog this model reads and writes.
    @ObservationIgnored public let catalog: Catalog
    /// The user whose position this is.
    @ObservationIgnored public let user: String
    /// The featured landmarks, in page order (empty until the first read, or when nothing is featured).
    public private(set) var pages: [Landmark] = []
    /// The number of pages.
    public var pageCount: Int { pages.count }
    /// The page shown (0-based; 0 when there are no pages).
    ///
    /// Setting it (a swipe, a tap on the page control) clamps it into `0..<pageCount` and writes it
    /// through, coalesced.
    public var currentPage: Int {
        get { page }
        set { select(newValue) }
    }
    /// The last failure, nil after the next success.
    public private(set) var lastError: (any Error)?
    /// True once the first read arrived.
    public private(set) var isLoaded = false

    private var page = 0
    /// What the user is on: the landmark and page as stored (or as just chosen here), resolved against
    /// `pages` as docs/cli.md §4 says.
    @ObservationIgnored private var anchor: (page: Int, landmark: Int64?)?
    /// The newest position stamp seen or written: older positions are not applied.
    @ObservationIgnored private var newestStamp: HLCStamp?
    @ObservationIgnored private let configuration: Configuration
    @ObservationIgnored private var unsent = false
    @ObservationIgnored private var firstUnsent: ContinuousClock.Instant?
    /// When the last write was started: a change within the window after it is held.
    @ObservationIgnored private var lastWriteStart: ContinuousClock.Instant?
    @ObservationIgnored private var writesInFlight = 0
    @ObservationIgnored private var timer: Task<Void, Never>?
    @ObservationIgnored private var lastWrite: Task<Void, Never>?
    @ObservationIgnored private var observation: Task<Void, Never>?
    /// A page set before the first read arrived: applied (and written) once the pages are known.
    @ObservationIgnored private var requestedBeforeLoad: Int?

    /// Starts observing `user`'s carousel in `catalog`, with the default ``Configuration``
    /// (250 ms window, 1 s at most).
    public convenience init(catalog: Catalog, user: String) {
        self.init(catalog: catalog, user: user, configuration: Configuration())
    }

    /// Starts observing `user`'s carousel in `catalog`, coalescing writes as `configuration` says.
    public init(catalog: Catalog, user: String, configuration: Configuration) {
        self.catalog = catalog
        self.user = user
        self.configuration = configuration
        observation = Task { [weak self, catalog, user] in
            var backoff = 0.25
            while !Task.isCancelled {
                do {
                    for try await snapshot in catalog.observe({ try await $0.carousel(user: user) }) {
                        guard let self else { return }
                        self.apply(snapshot)
                        backoff = 0.25
                    }
                    return
                } catch {
                    guard let self else { return }
                    self.lastError = error
                    // Retrying cannot help a closed catalog or an invalid user id.
                    if let error = error as? CatalogError, error.reason == .closed || error.reason == .invalidUser { return }
                }
                try? await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, 5)
            }
        }
    }

    deinit {
        observation?.cancel()
        timer?.cancel()
    }

    /// Sends an unsent page now and waits until every write started so far has finished.
    public func flush() async {
        // A page set before the first read is written once the pages are known: wait for them (at most 5 s).
        let deadline = ContinuousClock.now + .seconds(5)
        while requestedBeforeLoad != nil && !isLoaded && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        timer?.cancel()
        timer = nil
        startWrite()
        await lastWrite?.value
    }

    /// Stops observing and writing (an unsent page is dropped: call ``flush()`` first to keep it).
    public func stop() {
        observation?.cancel()
        timer?.cancel()
        unsent = false
    }

    // MARK: - Local changes

    private func select(_ requested: Int) {
        guard isLoaded else {
            // Not loaded yet: nothing to clamp into. Kept, and applied when the pages arrive.
            requestedBeforeLoad = requested
            return
        }
        guard !pages.isEmpty else { return }
        let p = min(max(requested, 0), pages.count - 1)
        if p != page { page = p }
        anchor = (p, pages[p].id)
        let now = ContinuousClock.now
        // Quiet: nothing held, nothing being written, and the window after the last write is over.
        let quiet = !unsent && writesInFlight == 0 && lastWriteStart.map { now - $0 >= configuration.coalescingWindow } ?? true
        unsent = true
        guard !quiet else {
            startWrite()  // the leading edge: the swipe is stored now
            return
        }
        if firstUnsent == nil { firstUnsent = now }
        let deadline = min(now + configuration.coalescingWindow, (firstUnsent ?? now) + configuration.maximumWriteDelay)
        timer?.cancel()
        timer = Task { [weak self] in
            do { try await Task.sleep(until: deadline) } catch { return }
            self?.startWrite()
        }
    }

    /// Starts the write of the unsent page, after the writes before it.
    private func startWrite() {
        guard unsent, let anchor else { return }
        unsent = false
        firstUnsent = nil
        timer?.cancel()
        timer = nil
        lastWriteStart = ContinuousClock.now
        writesInFlight += 1
        let previous = lastWrite
        lastWrite = Task { [weak self, catalog, user] in
            await previous?.value
            var result: Result<CarouselPosition, any Error>
            do {
                result = .success(try await catalog.setPosition(user: user, to: anchor.landmark.map(PositionTarget.landmark) ?? .page(anchor.page)))
            } catch let error as CatalogError where error.reason == .notFeatured && anchor.landmark != nil {
                // The landmark stopped being featured meanwhile: store the page, as a tap on it would.
                do { result = .success(try await catalog.setPosition(user: user, to: .page(anchor.page))) } catch { result = .failure(error) }
            } catch {
                result = .failure(error)
            }
            self?.finishWrite(result)
        }
    }

    private func finishWrite(_ result: Result<CarouselPosition, any Error>) {
        writesInFlight -= 1
        switch result {
        case .success(let stored):
            if newestStamp.map({ stored.stamp > $0 }) ?? true { newestStamp = stored.stamp }
            lastError = nil
        case .failure(let error):
            lastError = error
        }
    }

    // MARK: - Changes from the catalog

    private func apply(_ snapshot: CarouselSnapshot) {
        if snapshot.pages != pages { pages = snapshot.pages }
        isLoaded = true
        lastError = nil
        if let position = snapshot.position, !unsent, writesInFlight == 0, newestStamp.map({ position.stamp > $0 }) ?? true {
            newestStamp = position.stamp
            anchor = (position.storedPage, position.storedLandmarkID)
        }
        guard let anchor else {
            if page != 0 && pages.isEmpty { page = 0 }
            applyRequestBeforeLoad()
            return
        }
        // docs/cli.md §4, by the same function `position get` uses.
        let resolved = Positions.resolve(
            user: user, page: anchor.page, landmarkID: anchor.landmark,
            stamp: newestStamp ?? HLCStamp(wallMilliseconds: 0, counter: 0, node: ""),
            featured: pages.map(\.id))
        let target = resolved.currentPage ?? 0
        if target != page { page = target }
        applyRequestBeforeLoad()
    }

    private func applyRequestBeforeLoad() {
        guard let requested = requestedBeforeLoad else { return }
        requestedBeforeLoad = nil
        select(requested)
    }
}
