"""A third hand-labelled set: long and formatted answers (reasoning, markdown, lists, tags) to the items
of :mod:`tests.judge.natural_items` and :mod:`tests.judge.natural_items_heldout`, written after both
and judged only once complete (first agreement figure in ``docs/figures.md``)."""

from __future__ import annotations

ANSWERS: list[tuple[str, str, bool]] = [
    # IE plate of the grey car: CJV 44E
    (
        "q_8dd3fa12",
        "Let me look at the photos from the birthday shopping trip. There were two cars: a white one with the "
        "plate GY63 PCL and a grey one.\n\n**Answer:** The grey car's plate was CJV 44E.",
        True,
    ),
    (
        "q_8dd3fa12",
        "Looking at the photos, the grey car's plate read CJV 44E. Hmm, wait - that was the white car. The grey "
        "one was GY63 PCL.",
        False,
    ),
    ("q_8dd3fa12", "[REASONING] Two cars appear; the grey one is parked on the left. [ANSWER] CJV 44E", True),
    ("q_8dd3fa12", "- White car: GY63 PCL\n- Grey car: CJV 44E", True),
    ("q_8dd3fa12", "- White car: CJV 44E\n- Grey car: GY63 PCL", False),
    # IE colour of the car: white
    ("q_f375570f", "The car with plate BX 425VM is **white**.", True),
    ("q_f375570f", "I believe the car was white, though it might have been light grey in that light.", False),
    ("q_f375570f", "Final answer: white", True),
    # IE object left of the blue plant pot: green mug
    (
        "q_ab73bc81",
        "On the bathroom shelf, from left to right: a red vase, a green mug, the blue plant pot, a white cup. "
        "So the object directly to the left of the blue plant pot is the green mug.",
        True,
    ),
    (
        "q_ab73bc81",
        "On the bathroom shelf, from left to right: a green mug, a red vase, the blue plant pot. So the object "
        "directly to the left of the blue plant pot is the red vase.",
        False,
    ),
    ("q_ab73bc81", "**Green mug**", True),
    # IE 4 items at the shelf price: £15.96
    ("q_4818c34b", "The shelf price was £3.99.\n\n4 × £3.99 = **£15.96**", True),
    ("q_4818c34b", "The shelf price was £3.99, so four would be £15.96 - or £14.99 with the multi-buy offer.", False),
    ("q_4818c34b", "Answer: £15.96 (4 at £3.99).", True),
    # IE receipt paid by card: $48.63
    (
        "q_fa13d3e4",
        "You shared two receipts from the design fair with Nadia:\n1. Paid in cash: $22.10\n2. Paid by card: "
        "$48.63\n\nThe card receipt's total was $48.63.",
        True,
    ),
    (
        "q_fa13d3e4",
        "You shared two receipts from the design fair with Nadia:\n1. Paid in cash: $48.63\n2. Paid by card: "
        "$22.10\n\nThe card receipt's total was $22.10.",
        False,
    ),
    # IE purple plant pots: 5
    (
        "q_c5357c31",
        "Counting the purple plant pots on the studio shelf: two on the top shelf, two in the middle and one at "
        "the bottom. That gives 5.",
        True,
    ),
    (
        "q_c5357c31",
        "Counting the purple plant pots on the studio shelf: two on the top shelf and two in the middle. That gives 4.",
        False,
    ),
    ("q_c5357c31", "**5** purple plant pots.", True),
    # IE pack size: 250 g
    ("q_a287c61a", "The Saltmarsh Espresso Beans box said **250 g** on the front.", True),
    ("q_a287c61a", "It was a 250 g box - no wait, the 250 g one was the corn flakes; the espresso was 500 g.", False),
    # IE start time: 14:45
    (
        "q_0f36de57",
        "The record fair tickets included a sports ticket and an exhibition ticket. The sports ticket's start time "
        "was 14:45.",
        True,
    ),
    ("q_0f36de57", "The sports ticket started at 2:45 in the afternoon.", True),
    ("q_0f36de57", "The sports ticket's printed time was 14:45, but doors opened at 14:00, so 14:00.", False),
    # IE confirmation number: CNB679484
    ("q_b6475e47", "**Confirmation number:** CNB679484", True),
    ("q_b6475e47", "I think it was CNB679484 or CNB679448; the last digits were hard to read.", False),
    # IE flight number: SX 2131
    ("q_2525af1b", "In the chat with Aiko you wrote that your flight was SX 2131, landing at 15:20.", True),
    ("q_2525af1b", "In the chat with Aiko you wrote that your flight was SX 2113, landing at 15:20.", False),
    # IE check-out date: 2023/05/11
    (
        "q_2315ed7d",
        "The booking page showed check-in on 2023/05/08 and check-out on 2023/05/11.\n\nAnswer: 2023/05/11",
        True,
    ),
    ("q_2315ed7d", "The booking page showed check-in on 2023/05/08 and check-out on 2023/05/11.", True),
    ("q_2315ed7d", "The booking page showed check-in on 2023/05/11 and check-out on 2023/05/14.", False),
    # IE nights: 6
    ("q_6a14c505", "The booking was for six nights (check-in Monday, check-out the following Sunday).", True),
    ("q_6a14c505", "The booking was for seven nights, checking out on Sunday.", False),
    # IE meeting time: 18:30
    ("q_dffab9ff", "Nadia suggested 18:00 and you replied '18:30 works better', so you agreed on 18:30.", True),
    ("q_dffab9ff", "Nadia suggested 18:30 and you replied '18:00 works better', so you agreed on 18:00.", False),
    # IE new time: 09:30
    ("q_cddb29e8", "Hana's message said: 'Can we do 9:30 instead of 8?' So the new time is 09:30.", True),
    ("q_cddb29e8", "Hana's message said: 'Can we do 8 instead of 9:30?' So the new time is 08:00.", False),
    # IE order total: $65.98
    ("q_0c5e8378", "Subtotal $59.99, delivery $5.99, total **$65.98**.", True),
    ("q_0c5e8378", "Subtotal $59.99 and delivery $5.99.", False),
    # KU: Cobble Scoops (was Maple Gelato)
    (
        "q_2a553ec7",
        "You first mentioned Foxglove Scoops, then Birchwood Creamery, then Maple Gelato, and most recently you "
        "said you take your niece to Cobble Scoops. So it's Cobble Scoops.",
        True,
    ),
    (
        "q_2a553ec7",
        "You first mentioned Foxglove Scoops, then Birchwood Creamery, then Cobble Scoops, and most recently you "
        "said you take your niece to Maple Gelato. So it's Maple Gelato.",
        False,
    ),
    ("q_2a553ec7", "**Cobble Scoops** (it replaced Maple Gelato).", True),
    ("q_2a553ec7", "**Maple Gelato** (it replaced Cobble Scoops).", False),
    # KU: WFB 4MY (was DNT 5KG)
    ("q_2ccfa75d", "Your latest car for choir practice has the plate WFB 4MY.", True),
    ("q_2ccfa75d", "You used to drive WFB 4MY, but you've since switched to DNT 5KG.", False),
    ("q_2ccfa75d", "You used to drive DNT 5KG, but you've since switched to WFB 4MY.", True),
    # KU: The Rowan Tree (was Quayside Tap)
    ("q_58afe3ca", "After the run the club now heads to **The Rowan Tree** instead of Quayside Tap.", True),
    ("q_58afe3ca", "After the run the club now heads to **Quayside Tap** instead of The Rowan Tree.", False),
    # KU: Highland Harvest (was Oakridge Mills)
    ("q_1e11c9cd", "For studying you've switched to Highland Harvest.", True),
    ("q_1e11c9cd", "For studying you've switched back to Oakridge Mills.", False),
    # KU plate: CG 158HP (was DF 079WL)
    ("q_47cd36d9", "Current: CG 158HP\nPrevious: DF 079WL", True),
    ("q_47cd36d9", "Current: DF 079WL\nPrevious: CG 158HP", False),
    # KU coffee: Bramble & Co (was Amberfield)
    ("q_afa794d8", "You moved from Amberfield to Bramble & Co for the office.", True),
    ("q_afa794d8", "You moved from Bramble & Co to Amberfield for the office.", False),
    # MSR arithmetic: $11.74
    ("q_3dc34519", "Price labels from the vineyard tour:\n- $4.50\n- $3.25\n- $3.99\n\nTotal: $11.74", True),
    ("q_3dc34519", "Price labels from the vineyard tour:\n- $4.50\n- $3.25\n- $3.99\n\nTotal: $11.47", False),
    (
        "q_3dc34519",
        "Adding the current prices: 4.50 + 3.25 = 7.75, plus 3.99 gives 11.74. So the tour cost you $11.74.",
        True,
    ),
    ("q_3dc34519", "Adding the current prices: 4.50 + 3.25 = 7.75, plus 3.99.", False),
    # MSR arithmetic: $71.06
    (
        "q_2ae96eb2",
        "Receipt totals: $24.31 and $18.25 ($42.56). You also told me you paid $28.50 for the paint. "
        "Grand total: $71.06.",
        True,
    ),
    (
        "q_2ae96eb2",
        "Receipt totals: $24.31 and $18.25 ($42.56). You also told me you paid $28.50 for the paint, but "
        "that wasn't at the hardware store. Grand total: $42.56.",
        False,
    ),
    # MSR counting: 7
    (
        "q_2d3bb414",
        "Going through the price labels one by one:\n1. on sale\n2. regular\n3. on sale\n4. on sale\n5. on sale\n"
        "6. on sale\n7. on sale\n8. on sale\n9. regular\n\nThat's 7 labels for items on sale.",
        True,
    ),
    (
        "q_2d3bb414",
        "Going through the price labels one by one:\n1. on sale\n2. regular\n3. on sale\n4. on sale\n5. on sale\n"
        "6. on sale\n7. regular\n8. on sale\n9. regular\n\nThat's 6 labels for items on sale.",
        False,
    ),
    ("q_2d3bb414", "The answer is 7.", True),
    ("q_2d3bb414", "I'd say 7, maybe 8 - one label was partly hidden.", False),
    # MSR count of places: 2
    ("q_66f6ff04", "Across the five photos I can identify 2 different places: a cafe and a spice stall.", True),
    (
        "q_66f6ff04",
        "Across the five photos I can identify 3 different places: a cafe, a spice stall and a bakery.",
        False,
    ),
    # MSR yes/no: Yes
    (
        "q_153acdaa",
        "The first receipt is from Trailhead Outfitters and the last one is also from Trailhead Outfitters. "
        "So yes, it's the same shop.",
        True,
    ),
    (
        "q_153acdaa",
        "The first receipt is from Trailhead Outfitters and the last one is from Summit Gear. So no, they're from "
        "different shops.",
        False,
    ),
    # MSR yes/no: No
    ("q_002c1ad5", "**No** - the first photo was a cafe and the last one a bookshop.", True),
    ("q_002c1ad5", "**Yes** - both photos show the same cafe.", False),
    # TR date: 2024/10/04
    (
        "q_8322d9a2",
        'The calendar in your partner\'s hallway (photographed on 2024/09/17) had "Eye exam" written on Friday '
        "the 4th of October 2024.\n\nAnswer: 2024/10/04",
        True,
    ),
    (
        "q_8322d9a2",
        'The calendar in your partner\'s hallway had "Eye exam" on the 4th; you photographed it on 2024/09/17, '
        "so the date is 2024/09/17.",
        False,
    ),
    # TR date: 2025/12/26
    (
        "q_867667a0",
        "[REASONING] The photo of the book was sent on 2025/12/29 and you said you found it three days "
        "earlier. [ANSWER] 2025/12/26",
        True,
    ),
    ("q_867667a0", "[REASONING] The photo of the book was sent on 2025/12/29. [ANSWER] 2025/12/29", False),
    # TR duration: B
    (
        "q_6a9b93c6",
        "A: from finding the book to Everly Tailors is 32 days.\nB: from the festival to Mirabel Framing is 58 "
        "days.\n\nB lasted longer.",
        True,
    ),
    (
        "q_6a9b93c6",
        "A: from finding the book to Everly Tailors is 58 days.\nB: from the festival to Mirabel Framing is 32 "
        "days.\n\nA lasted longer.",
        False,
    ),
    ("q_6a9b93c6", "**B**", True),
    # TR duration: B
    ("q_0cafabbf", "The Naples trip lasted 10 days, while the other stretch lasted 30 days. **Answer: B**", True),
    ("q_0cafabbf", "The Naples trip lasted 30 days, while the other stretch lasted 10 days. **Answer: A**", False),
    # TR order: (3)(2)(4)(1)
    (
        "q_981de60d",
        "Dates: book found 2024/05/15, Larkspur Gelato 2024/07/14, Mirabel Tailors 2024/07/16, Naples flight "
        "2024/07/24.\n\nOrder: (3)(2)(4)(1)",
        True,
    ),
    (
        "q_981de60d",
        "Dates: Larkspur Gelato 2024/05/15, book found 2024/07/14, Mirabel Tailors 2024/07/16, Naples flight "
        "2024/07/24.\n\nOrder: (2)(3)(4)(1)",
        False,
    ),
    ("q_981de60d", "**Answer:** (3) → (2) → (4) → (1)", True),
    # TR order: (2)(1)(3)
    ("q_ff23e91b", "The correct order, earliest first, is 2, 1, 3.", True),
    ("q_ff23e91b", "The correct order, earliest first, is 1, 2, 3.", False),
    # AR
    (
        "q_ceebd62b",
        "I checked our conversations: you told me about the Vilnius trip dates, but the race training calendar "
        "was never shared. Without it I can't say which lasted longer.",
        True,
    ),
    (
        "q_ceebd62b",
        "I checked our conversations: you told me about the Vilnius trip dates and the race training calendar. "
        "The training lasted longer, so B.",
        False,
    ),
    ("q_9f55dbc7", "**Insufficient information** - no photos from a museum cafe with Sam were shared.", True),
    ("q_9f55dbc7", "Based on the photos, there were **2** different places.", False),
    ("q_b70a0741", "Hmm, I don't recall you ever mentioning a trip to Tbilisi, so I can't give a date.", True),
    ("q_b70a0741", "You mentioned your Tbilisi flight in our chat on 2024/06/12.", False),
    ("q_755ec92a", "The bookshelf took 50 minutes, but I have nothing on how long the stew took.", True),
    ("q_755ec92a", "The bookshelf took 50 minutes and the stew 6 hours, so A.", False),
]
