"""Where the regions are: the distance model behind "the allowed region nearest to
where a message enters" (`publishing.land`).

Distance model: great-circle (haversine) distance between the cities that host the
regions. The city of each region is the one Google Cloud's public locations list
names for it (cloud.google.com/about/locations); the coordinates are those cities'
(rounded to 0.1 degree), not data-centre positions, which Google does not publish.
The service's own routing follows its network, not geometry, so this is a model: it
gives the documented example (us-east1 -> us-central1 when only us-central1 is
allowed) and keeps a European publisher's messages in Europe when a European region
is allowed. Ties, and regions without coordinates (restricted regions such as
us-central2), fall back to the order of the regions given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# region: (latitude, longitude) of the city named for it.
REGION_COORDINATES: dict[str, tuple[float, float]] = {
    "africa-south1": (-26.2, 28.0),  # Johannesburg
    "asia-east1": (24.1, 120.5),  # Changhua County, Taiwan
    "asia-east2": (22.3, 114.2),  # Hong Kong
    "asia-northeast1": (35.7, 139.7),  # Tokyo
    "asia-northeast2": (34.7, 135.5),  # Osaka
    "asia-northeast3": (37.6, 127.0),  # Seoul
    "asia-south1": (19.1, 72.9),  # Mumbai
    "asia-south2": (28.6, 77.2),  # Delhi
    "asia-southeast1": (1.3, 103.7),  # Jurong West, Singapore
    "asia-southeast2": (-6.2, 106.8),  # Jakarta
    "asia-southeast3": (13.8, 100.5),  # Bangkok
    "australia-southeast1": (-33.9, 151.2),  # Sydney
    "australia-southeast2": (-37.8, 145.0),  # Melbourne
    "europe-central2": (52.2, 21.0),  # Warsaw
    "europe-north1": (60.6, 27.2),  # Hamina
    "europe-north2": (59.3, 18.1),  # Stockholm
    "europe-southwest1": (40.4, -3.7),  # Madrid
    "europe-west1": (50.5, 3.8),  # St. Ghislain
    "europe-west10": (52.5, 13.4),  # Berlin
    "europe-west12": (45.1, 7.7),  # Turin
    "europe-west2": (51.5, -0.1),  # London
    "europe-west3": (50.1, 8.7),  # Frankfurt
    "europe-west4": (53.4, 6.8),  # Eemshaven
    "europe-west6": (47.4, 8.5),  # Zurich
    "europe-west8": (45.5, 9.2),  # Milan
    "europe-west9": (48.9, 2.4),  # Paris
    "me-central1": (25.3, 51.5),  # Doha
    "me-central2": (26.4, 50.1),  # Dammam
    "me-west1": (32.1, 34.8),  # Tel Aviv
    "northamerica-northeast1": (45.5, -73.6),  # Montreal
    "northamerica-northeast2": (43.7, -79.4),  # Toronto
    "northamerica-south1": (20.6, -100.4),  # Queretaro
    "southamerica-east1": (-23.5, -46.8),  # Osasco (Sao Paulo)
    "southamerica-west1": (-33.4, -70.7),  # Santiago
    "us-central1": (41.3, -95.9),  # Council Bluffs, Iowa
    "us-east1": (33.2, -80.0),  # Moncks Corner, South Carolina
    "us-east4": (39.0, -77.5),  # Ashburn, Virginia
    "us-east5": (40.0, -83.0),  # Columbus, Ohio
    "us-south1": (32.8, -96.8),  # Dallas
    "us-west1": (45.6, -121.2),  # The Dalles, Oregon
    "us-west2": (34.1, -118.2),  # Los Angeles
    "us-west3": (40.8, -111.9),  # Salt Lake City
    "us-west4": (36.2, -115.1),  # Las Vegas
}

EARTH_RADIUS_KM = 6371.0


def distance_km(a: str, b: str) -> float:
    """Great-circle distance between two regions' cities (inf when one is unknown)."""
    if a == b:
        return 0.0
    pa, pb = REGION_COORDINATES.get(a), REGION_COORDINATES.get(b)
    if pa is None or pb is None:
        return math.inf
    lat1, lon1, lat2, lon2 = map(math.radians, (*pa, *pb))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def nearest(region: str, candidates: Sequence[str]) -> str:
    """The candidate nearest to `region` (the first of equals: ties and regions
    without coordinates follow the candidates' order). `candidates` is not empty."""
    return min(candidates, key=lambda r: distance_km(region, r))
