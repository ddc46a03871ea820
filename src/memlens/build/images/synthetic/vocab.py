"""Word lists for procedural content (names, places, shops, products). Fictional, ASCII-safe where it matters."""
from __future__ import annotations

FIRST_NAMES = [
    "Emma", "Liam", "Olivia", "Noah", "Ava", "Lucas", "Mia", "Ethan", "Sofia", "Mateo", "Isla", "Leo",
    "Chloe", "Omar", "Hana", "Ravi", "Priya", "Kenji", "Yuki", "Lena", "Jonas", "Freya", "Nils", "Clara",
    "Marco", "Giulia", "Diego", "Lucia", "Samir", "Aisha", "Tariq", "Nadia", "Felix", "Ida", "Oscar",
    "Maya", "Theo", "Zoe", "Hugo", "Alice", "Jack", "Ruby", "Daniel", "Grace", "Sam", "Nora", "Ben",
    "Elena", "Tom", "Julia", "Max", "Lily", "Adam", "Sara", "Ivan", "Anya", "Kai", "Leah", "Finn", "Rosa",
]
LAST_NAMES = [
    "Smith", "Johnson", "Garcia", "Miller", "Brown", "Wilson", "Moore", "Taylor", "Anderson", "Thomas",
    "Martin", "Lee", "Walker", "Hall", "Young", "King", "Wright", "Lopez", "Hill", "Green", "Baker",
    "Nelson", "Carter", "Mitchell", "Rossi", "Bianchi", "Schmidt", "Fischer", "Weber", "Hansen",
    "Jensen", "Nielsen", "Larsen", "Tanaka", "Sato", "Suzuki", "Kim", "Park", "Chen", "Wang", "Singh",
    "Patel", "Novak", "Dubois", "Moreau", "Silva", "Costa", "Murphy", "Kelly", "Byrne",
]
# (city, IATA code, country)
CITIES = [
    ("Portland", "PDX", "USA"), ("Seattle", "SEA", "USA"), ("Boston", "BOS", "USA"), ("Chicago", "ORD", "USA"),
    ("Denver", "DEN", "USA"), ("Austin", "AUS", "USA"), ("San Francisco", "SFO", "USA"),
    ("New York", "JFK", "USA"), ("Miami", "MIA", "USA"), ("Toronto", "YYZ", "Canada"),
    ("Vancouver", "YVR", "Canada"), ("London", "LHR", "UK"), ("Manchester", "MAN", "UK"),
    ("Edinburgh", "EDI", "UK"), ("Dublin", "DUB", "Ireland"), ("Paris", "CDG", "France"),
    ("Lyon", "LYS", "France"), ("Berlin", "BER", "Germany"), ("Munich", "MUC", "Germany"),
    ("Hamburg", "HAM", "Germany"), ("Amsterdam", "AMS", "Netherlands"), ("Copenhagen", "CPH", "Denmark"),
    ("Aarhus", "AAR", "Denmark"), ("Stockholm", "ARN", "Sweden"), ("Oslo", "OSL", "Norway"),
    ("Helsinki", "HEL", "Finland"), ("Madrid", "MAD", "Spain"), ("Barcelona", "BCN", "Spain"),
    ("Lisbon", "LIS", "Portugal"), ("Rome", "FCO", "Italy"), ("Milan", "MXP", "Italy"),
    ("Vienna", "VIE", "Austria"), ("Zurich", "ZRH", "Switzerland"), ("Prague", "PRG", "Czechia"),
    ("Tokyo", "HND", "Japan"), ("Osaka", "KIX", "Japan"), ("Seoul", "ICN", "South Korea"),
    ("Singapore", "SIN", "Singapore"), ("Sydney", "SYD", "Australia"), ("Melbourne", "MEL", "Australia"),
    ("Auckland", "AKL", "New Zealand"), ("Reykjavik", "KEF", "Iceland"), ("Athens", "ATH", "Greece"),
]
CURRENCY_CITIES = {
    "USD": ["Portland", "Seattle", "Boston", "Chicago", "Denver", "Austin", "San Francisco", "New York", "Miami"],
    "EUR": ["Paris", "Lyon", "Berlin", "Munich", "Hamburg", "Amsterdam", "Madrid", "Barcelona", "Lisbon",
            "Rome", "Milan", "Vienna", "Dublin", "Helsinki", "Athens"],
    "GBP": ["London", "Manchester", "Edinburgh"],
    "DKK": ["Copenhagen", "Aarhus"],
    "JPY": ["Tokyo", "Osaka"],
    "CHF": ["Zurich"],
}
STREET_NAMES = [
    "Harbor", "Maple", "Oak", "Cedar", "Elm", "Willow", "Birch", "Pine", "Lake", "River", "Hill", "Park",
    "Market", "Church", "Mill", "Station", "Garden", "Orchard", "Bridge", "Castle", "King", "Queen",
    "Victoria", "Lincoln", "Franklin", "Jefferson", "Union", "Highland", "Sunset", "Meadow", "Forest",
    "Spring", "Chestnut", "Walnut", "Ash", "Rose", "Lavender", "Bay", "Ocean", "Canal",
]
STREET_TYPES = ["St", "Ave", "Rd", "Lane", "Blvd", "Way", "Pl", "Dr"]
STREET_TYPES_LONG = {"St": "Street", "Ave": "Avenue", "Rd": "Road", "Lane": "Lane", "Blvd": "Boulevard",
                     "Way": "Way", "Pl": "Place", "Dr": "Drive"}
SHOP_WORDS = [
    "Luna", "Aurora", "Willow", "Copper", "Golden", "Blue Door", "Red Fox", "Maple", "Harbor", "Juniper",
    "Olive", "Saffron", "Pebble", "Lantern", "Nordic", "Sunny", "Little", "Corner", "Old Town", "Green Leaf",
    "Silver Spoon", "Bluebird", "Hazel", "Ember", "Meadow", "Fig & Honey", "Wild Thyme", "Oak & Iron",
    "Northside", "Sparrow", "Tidewater", "Cobble", "Marigold", "Basil", "Ivy", "Driftwood", "Acorn",
]
# store type -> (suffixes, [(item, lo, hi)])
STORES: dict[str, tuple[list[str], list[tuple[str, float, float]]]] = {
    "bakery": (["Bakery", "Bakehouse", "Patisserie", "Bread Co."], [
        ("Sourdough loaf", 5.5, 8.0), ("Croissant", 2.2, 3.8), ("Pain au chocolat", 2.5, 4.2),
        ("Cinnamon roll", 3.0, 4.8), ("Baguette", 2.0, 3.6), ("Rye bread", 4.5, 7.0),
        ("Blueberry muffin", 2.8, 4.0), ("Almond croissant", 3.2, 4.8), ("Carrot cake slice", 3.9, 5.5),
        ("Lemon tart", 4.0, 6.0), ("Bagel", 1.8, 3.2), ("Focaccia", 4.0, 6.5), ("Cheese scone", 2.6, 3.9),
    ]),
    "cafe": (["Cafe", "Coffee", "Espresso Bar", "Tea House"], [
        ("Flat white", 3.8, 5.2), ("Cappuccino", 3.6, 5.0), ("Latte", 3.9, 5.5), ("Espresso", 2.4, 3.5),
        ("Americano", 3.0, 4.2), ("Chai latte", 4.2, 5.6), ("Matcha latte", 4.5, 6.0), ("Hot chocolate", 3.5, 4.8),
        ("Iced coffee", 4.0, 5.5), ("Avocado toast", 8.0, 12.0), ("Banana bread", 3.5, 4.8),
        ("Granola bowl", 7.5, 10.0), ("Ham sandwich", 6.5, 9.5), ("Orange juice", 3.8, 5.0),
    ]),
    "grocery": (["Market", "Grocers", "Foods", "Supermarket"], [
        ("Bananas 1kg", 1.2, 2.5), ("Whole milk 1L", 1.1, 2.2), ("Free-range eggs x12", 3.5, 5.5),
        ("Cheddar cheese", 3.5, 6.5), ("Greek yogurt", 2.5, 4.5), ("Spaghetti 500g", 1.0, 2.4),
        ("Tomatoes", 2.0, 3.8), ("Olive oil", 6.0, 11.0), ("Basmati rice 1kg", 2.5, 4.5),
        ("Chicken breast", 6.0, 10.0), ("Apples 1kg", 2.5, 4.0), ("Oat milk", 2.2, 3.5),
        ("Coffee beans", 7.5, 13.0), ("Dark chocolate", 2.0, 3.8), ("Orange juice 1L", 2.5, 4.2),
        ("Butter 250g", 2.3, 3.9), ("Frozen peas", 1.5, 2.9), ("Paper towels", 3.0, 5.5),
    ]),
    "pharmacy": (["Pharmacy", "Chemist", "Apothecary"], [
        ("Ibuprofen 200mg", 4.0, 8.0), ("Vitamin D3", 6.0, 12.0), ("Sunscreen SPF50", 9.0, 16.0),
        ("Hand cream", 4.5, 9.0), ("Throat lozenges", 3.5, 6.5), ("Plasters x20", 2.5, 5.0),
        ("Toothpaste", 2.5, 5.0), ("Cough syrup", 6.5, 11.0), ("Allergy tablets", 7.0, 13.0),
        ("Lip balm", 2.0, 4.5), ("Shampoo", 4.0, 8.5), ("Cotton pads", 1.8, 3.5),
    ]),
    "hardware": (["Hardware", "Tools", "Home & Garden"], [
        ("Wood screws x50", 3.5, 6.5), ("Claw hammer", 12.0, 22.0), ("Masking tape", 3.0, 5.5),
        ("Paint brush set", 7.0, 14.0), ("LED bulb E27", 4.0, 8.0), ("Extension cord", 12.0, 20.0),
        ("Sandpaper pack", 4.5, 8.0), ("Wall anchors", 3.0, 6.0), ("Garden gloves", 6.0, 11.0),
        ("Potting soil 20L", 6.0, 10.0), ("Cable ties", 2.5, 5.0), ("Tape measure", 8.0, 15.0),
    ]),
    "restaurant": (["Kitchen", "Bistro", "Trattoria", "Diner", "Grill"], [
        ("Margherita pizza", 11.0, 15.0), ("Caesar salad", 9.0, 13.0), ("Burger & fries", 13.0, 18.0),
        ("Pad thai", 12.0, 16.0), ("Risotto", 14.0, 19.0), ("Fish tacos", 11.0, 15.0),
        ("Tomato soup", 6.0, 9.0), ("Sparkling water", 2.5, 4.0), ("Lemonade", 3.5, 5.0),
        ("Glass of red wine", 7.0, 11.0), ("Tiramisu", 6.5, 9.0), ("Garlic bread", 4.5, 6.5),
        ("Grilled salmon", 19.0, 26.0), ("Ramen", 12.0, 16.0),
    ]),
    "bookstore": (["Books", "Bookshop", "Booksellers"], [
        ("Paperback novel", 9.0, 16.0), ("Cookbook", 20.0, 35.0), ("Travel guide", 15.0, 25.0),
        ("Notebook A5", 6.0, 12.0), ("Bookmark", 2.0, 4.0), ("Children's book", 7.0, 14.0),
        ("Poetry collection", 11.0, 18.0), ("Tote bag", 12.0, 18.0), ("Greeting card", 3.0, 5.5),
    ]),
}
PAYMENT_METHODS = ["VISA", "Mastercard", "Cash", "Amex", "Debit card", "Apple Pay", "Google Pay", "Contactless"]

AIRLINES = [("Northwind Air", "NW"), ("Bluejay Airways", "BJ"), ("Aurora Airlines", "AU"),
            ("Skyline Express", "SX"), ("Pacific Crest", "PC"), ("Nordlys Air", "NL"),
            ("Meridian Airways", "MR"), ("Coral Air", "CR")]
CABINS = ["Economy", "Premium Economy", "Business"]

EVENTS = [
    ("concert", ["The Lumen Tides", "Velvet Harbor", "Midnight Orchard", "Paper Comets", "Glass Animals Tribute",
                 "City Philharmonic: Mahler 5", "Jazz at Dusk", "The Northern Lights Tour", "Neon Valley"]),
    ("theatre", ["Hamlet", "The Glass Menagerie", "A Midsummer Night's Dream", "Les Misérables",
                 "The Importance of Being Earnest", "Swan Lake", "The Nutcracker"]),
    ("sports", ["Harbor City FC vs Riverside United", "Metro Hawks vs Lakeside Bears", "City Marathon Expo",
                "Tennis Open: Quarterfinals", "Ice Hockey: Wolves vs Kings"]),
    ("exhibition", ["Impressions of Light", "Design Now 2024", "The Age of Dinosaurs", "Photography Biennale",
                    "Future Cities Expo"]),
    ("festival", ["Summer Sound Festival", "Food Truck Fiesta", "Lantern Night Market", "Harbor Jazz Festival"]),
]
VENUES = ["Riverside Arena", "Grand Theatre", "Harbor Hall", "The Roundhouse", "City Stadium",
          "Museum of Modern Art", "Old Mill Music Hall", "Civic Auditorium", "Lakeside Park Stage",
          "Royal Concert Hall", "Opera House", "Exhibition Centre"]

HOTELS = ["Hotel Aurora", "The Harbor Inn", "Grand Meridian", "Maple Lodge", "Hotel Nordlys", "Casa Luna",
          "The Copper Kettle Inn", "Seaside Suites", "Parkview Hotel", "The Willow House", "Alpine Chalet",
          "Hotel Belvedere"]
ROOM_TYPES = ["Standard Double", "Superior King", "Twin Room", "Deluxe Queen", "Junior Suite",
              "Family Room", "Single Room", "Studio Apartment"]
STREAMING = [("StreamFlix", ["Basic", "Standard", "Premium"]), ("Tunewave Music", ["Individual", "Duo", "Family"]),
             ("CineBox+", ["Monthly", "Annual"]), ("Podverse Plus", ["Monthly"]), ("KidsZone TV", ["Family"])]
WEATHER = ["Sunny", "Partly cloudy", "Cloudy", "Light rain", "Rain", "Thunderstorms", "Snow", "Fog", "Windy",
           "Clear"]
ONLINE_SHOPS = ["ShopNest", "Parcelly", "CartWise", "Bazaarly", "Northmart Online", "Pinecone Goods"]
ONLINE_ITEMS = [("Wireless earbuds", 29, 89), ("Yoga mat", 18, 40), ("Ceramic mug set", 15, 35),
                ("Phone case", 9, 25), ("Desk lamp", 22, 55), ("Running socks (3 pack)", 10, 20),
                ("Water bottle", 12, 30), ("Backpack", 35, 80), ("Board game", 20, 55), ("Throw blanket", 25, 60),
                ("Kitchen scale", 14, 30), ("USB-C cable", 8, 18), ("Plant mister", 7, 15), ("Puzzle 1000 pcs", 15, 28),
                ("Scented candle", 12, 26), ("Bluetooth speaker", 30, 90)]

BOOK_WORDS_A = ["The Silent", "A Winter", "The Last", "Beneath the", "The Glass", "Echoes of the", "The Hidden",
                "Letters from the", "The Salt", "A House of", "The Copper", "Beyond the", "The Paper",
                "Songs of the", "The Quiet"]
BOOK_WORDS_B = ["Harbor", "Orchard", "Lighthouse", "Garden", "River", "Archive", "Mountain", "Cartographer",
                "Meadow", "Island", "Forest", "Observatory", "Tides", "Kingdom", "Lantern", "Atlas"]
PUBLISHERS = ["Harbor Press", "Northlight Books", "Quill & Ink", "Juniper House", "Lantern Editions"]
BRANDS = ["Nordhaven", "Sunfield", "Bramble & Co", "Golden Acre", "Kitchen Hero", "Alpina", "Oatly Farms",
          "Crispin's", "Mountain Peak", "Verde", "Happy Hen", "Blue Coast", "Little Oak"]
BOX_PRODUCTS = [("Rolled Oats", ["500 g", "1 kg"]), ("Crunchy Granola", ["375 g", "500 g"]),
                ("Corn Flakes", ["375 g", "500 g"]), ("Earl Grey Tea", ["40 bags", "80 bags"]),
                ("Chamomile Tea", ["20 bags", "40 bags"]), ("Espresso Beans", ["250 g", "1 kg"]),
                ("Oat Crackers", ["200 g", "250 g"]), ("Pancake Mix", ["500 g", "750 g"]),
                ("Dark Chocolate 70%", ["100 g"]), ("Spaghetti No. 5", ["500 g"]), ("Jasmine Rice", ["1 kg", "2 kg"]),
                ("Muesli Classic", ["750 g"]), ("Dishwasher Tablets", ["30 tabs", "60 tabs"])]
SHOP_TYPES_SIGN = ["Bakery", "Books", "Cafe", "Florist", "Bistro", "Barber", "Deli", "Hardware", "Bike Shop",
                   "Pharmacy", "Bookshop", "Tea Room", "Gelato", "Records", "Tailor", "Optician"]

# chat message templates: plans with a time and a place
PLACES = ["Cafe Aurora", "the Harbor Market", "Luna Bakery", "Riverside Park", "the train station",
          "the Old Mill pub", "Maple Street Pizza", "the climbing gym", "the library", "Juniper Books",
          "the bus stop on Elm St", "Copper Kettle", "the pier", "Sparrow Coffee", "the cinema on Park Ave"]
ACTIVITIES = ["lunch", "coffee", "dinner", "the movie", "a run", "brunch", "the concert", "climbing",
              "board games", "the farmers market", "drinks", "a walk"]
