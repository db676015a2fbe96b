"""Hand-labelled homonyms for the sense probe (neighbours.sense_accuracy): word -> sense -> sentences.

Written for this package. Each word has two senses and six sentences per sense; the word occurs once in each
sentence, in lower case, as a whole word, at positions spread from the second word to near the end, matched
between the senses, so that the position of the word cannot tell the senses apart (the probe reports a
position-only classifier beside the layers to check this). Sentences are distinct.
"""

HOMONYMS = {
    "bank": {
        "river": (
            "The bank was muddy after the flood, so we walked carefully.",
            "We had a picnic on the grassy bank near the old bridge.",
            "Fishermen lined the bank of the river at dawn.",
            "Reeds grow thickly along the bank where the stream bends.",
            "After a long swim across the river, she rested on the bank.",
            "The children slid down the steep bank into the cold water.",
        ),
        "finance": (
            "The bank was closed after the robbery, so we went home.",
            "We opened a savings account at the local bank near the station.",
            "Customers queued at the bank to withdraw their wages.",
            "My mother works for the bank that financed our new house.",
            "After a long argument about the loan, he walked out of the bank.",
            "The company borrowed money from the bank to build a factory.",
        ),
    },
    "bat": {
        "animal": (
            "The bat flew out of the cave at dusk.",
            "A small bat was hanging upside down in the barn.",
            "At night a bat hunts insects using echoes.",
            "Scientists tagged the bat to follow its migration.",
            "We saw a brown bat circling the lamp in the garden.",
            "The farmer found a sleeping bat behind the shutters.",
        ),
        "sport": (
            "The bat cracked when he hit the fast ball.",
            "A heavy bat is hard to swing for young players.",
            "In cricket the bat is made of willow.",
            "She gripped the bat tightly and waited for the pitch.",
            "He bought a new wooden bat before the baseball season.",
            "The coach handed each player a bat and a helmet.",
        ),
    },
    "spring": {
        "season": (
            "The spring brought warm rain and new leaves.",
            "Every spring the birds return to the lake.",
            "We plant tomatoes in early spring when the frost ends.",
            "Flowers bloom in the spring after a cold winter.",
            "The festival takes place each spring in the village square.",
            "The weather last spring was unusually dry in the south.",
        ),
        "coil": (
            "The spring inside the pen pushes the tip out.",
            "A broken spring made the old mattress uncomfortable.",
            "He replaced the rusty spring in the door latch.",
            "The watch stopped because its main spring snapped.",
            "Press the lever until the spring is fully compressed.",
            "The mechanic fitted a stiffer spring to the suspension.",
        ),
    },
    "plant": {
        "organism": (
            "The plant needs sunlight and water to grow.",
            "She watered the small plant on her kitchen windowsill.",
            "In autumn this plant produces bright red berries.",
            "A tall plant with broad leaves grew beside the fence.",
            "The gardener pruned the plant to keep it healthy.",
            "Every single plant in the greenhouse had green leaves.",
        ),
        "factory": (
            "The plant employs three hundred workers on two shifts.",
            "They built a nuclear power plant near the coast.",
            "For years this plant assembled cars for the export market.",
            "A chemical plant leaked waste into the river.",
            "The company closed the plant after sales fell.",
            "Every single plant in the region stopped production during the strike.",
        ),
    },
    "match": {
        "fire": (
            "The match burned down to his fingers.",
            "She struck a match to light the candle.",
            "He needed one dry match to start the campfire.",
            "A single match can set a dry forest on fire.",
            "The wind blew out the match before the stove lit.",
            "Keep every match away from the gas can.",
        ),
        "game": (
            "The match ended in a draw after extra time.",
            "They watched the football match on television.",
            "He won the tennis match in three sets.",
            "A close match kept the crowd on its feet.",
            "The referee stopped the match because of the rain.",
            "Our team lost the final match of the season.",
        ),
    },
    "bark": {
        "tree": (
            "The bark of the old oak was rough and cracked.",
            "Deer had stripped the bark from the young trees.",
            "The white birch bark peels in thin layers.",
            "A beetle burrowed under the bark of the pine.",
            "The bark protects the tree from insects and fire.",
            "She pressed paper against the bark to make a rubbing.",
        ),
        "dog": (
            "The bark of the farmer's dog woke the baby.",
            "We heard a loud bark from behind the gate.",
            "Their dog gave a sharp bark at the postman.",
            "A single bark warned us that someone was outside.",
            "The bark echoed through the empty street at night.",
            "She recognised her puppy and its bark from across the park.",
        ),
    },
}
