"""Surgical, gastrointestinal, neurological, infectious, psychiatric, skin, ENT, MSK and gynaecological conditions.

Twenty templates in the style of ``core`` (see ``schema.Condition``): every patient sentence is first
person, in lay words and about its own topic only; tests left out of a template are normal.
"""

from __future__ import annotations

from agentrl.envs.consult.conditions.schema import Condition

_SAFETY_NET = ("follow-up", "follow up", "review", "return if", "come back")

CONDITIONS = (
    Condition(
        key="acute_cholecystitis",
        name="acute cholecystitis",
        synonyms=("cholecystitis", "calculous cholecystitis", "inflamed gallbladder", "gallbladder infection"),
        specialty="general surgery",
        complaint="a bad pain under my ribs on the right",
        hpi={
            "onset": ("It started yesterday evening.", "It came on about a day ago and hasn't gone away since."),
            "character": ("It's a constant, gripping ache.",),
            "location": ("It's up under my ribs on the right-hand side.",),
            "radiation": ("It goes through to my right shoulder blade.",),
            "severity": ("It's about eight out of ten.",),
            "aggravating": ("Fatty food and taking a deep breath in make it worse.",),
            "prior_episodes": (
                "I've had shorter bouts of the same pain after big meals over the last year.",
                "I had a few attacks like this before, but they always settled within a couple of hours.",
            ),
        },
        symptoms={
            "abdominal_pain": ("My upper belly really hurts.",),
            "fever": ("I've been feeling hot and shivery.", "I've had a temperature and the shakes."),
            "nausea": ("I feel sick all the time.",),
        },
        optional_symptoms={
            "vomiting": ("I've been sick twice.",),
            "appetite": ("I don't want to eat anything.",),
        },
        tests={
            "vital_signs": (
                "Temperature 38.3 C, heart rate 102/min, blood pressure 128/80 mmHg, "
                "respiratory rate 18/min, SpO2 97% on room air."
            ),
            "abdominal_exam": "Right upper quadrant tenderness with guarding; Murphy's sign positive; not jaundiced.",
            "cbc": "White cells 14.2 x10^9/L with neutrophilia; haemoglobin 139 g/L.",
            "crp": "CRP 118 mg/L.",
            "lft": "Bilirubin 19 umol/L, ALP 142 U/L, ALT 48 U/L (mildly raised).",
            "abdominal_ultrasound": (
                "Thick-walled gallbladder (5 mm) with multiple gallstones and pericholecystic fluid; "
                "sonographic Murphy's sign positive; common bile duct 5 mm."
            ),
        },
        key_questions=("onset", "location", "radiation", "aggravating", "prior_episodes"),
        red_flags=("fever",),
        key_tests=("abdominal_exam", "cbc", "abdominal_ultrasound"),
        plan=(
            ("antibiotic", "co-amoxiclav", "piperacillin", "cefuroxime"),
            ("surgeon", "surgical", "surgery", "cholecystectomy", "gallbladder removal"),
            ("admit", "admission", "hospital"),
        ),
        harmful=(("send you home", "go home and rest"),),
        differential=("biliary colic", "acute pancreatitis", "peptic ulcer disease", "acute hepatitis", "pneumonia"),
        ages=(30, 80),
    ),
    Condition(
        key="acute_pancreatitis",
        name="acute pancreatitis",
        synonyms=("pancreatitis", "alcohol-induced pancreatitis", "gallstone pancreatitis", "inflamed pancreas"),
        specialty="general surgery",
        complaint="a terrible pain at the top of my tummy",
        hpi={
            "onset": ("It came on suddenly last night.", "It started all of a sudden about twelve hours ago."),
            "character": ("It's a deep, boring pain that never lets up.",),
            "location": ("It's high up in the middle, just below my breastbone.",),
            "radiation": ("It goes straight through to my back.",),
            "severity": ("It's the worst pain I've ever had, ten out of ten.",),
            "relieving": ("Sitting up and leaning forward helps a little.",),
        },
        symptoms={
            "abdominal_pain": ("My belly is agony.",),
            "vomiting": ("I keep being sick, even water comes back up.", "I've been sick over and over."),
            "nausea": ("I feel really sick.",),
        },
        optional_symptoms={
            "fever": ("I've felt a bit hot and sweaty.",),
            "appetite": ("I can't face any food.",),
        },
        history={
            "alcohol": (
                "I drink most days, probably a bottle of wine or six cans of strong lager.",
                "I'm a heavy drinker, about eight pints a night and more at weekends.",
            ),
        },
        sensitive=("alcohol",),
        tests={
            "vital_signs": (
                "Temperature 37.9 C, heart rate 118/min, blood pressure 104/66 mmHg, "
                "respiratory rate 22/min, SpO2 95% on room air."
            ),
            "abdominal_exam": "Marked epigastric tenderness with guarding; reduced bowel sounds; no rebound.",
            "lipase": "Lipase 1850 U/L (more than three times the upper limit of normal).",
            "cbc": "White cells 16.1 x10^9/L; haemoglobin 148 g/L; platelets 260 x10^9/L.",
            "lft": "ALT 62 U/L, GGT 310 U/L, bilirubin 22 umol/L.",
            "electrolytes": "Urea 9.8 mmol/L, creatinine 112 umol/L, corrected calcium 2.02 mmol/L.",
            "abdominal_ultrasound": "No gallstones; bright, fatty liver; pancreas partly obscured by bowel gas.",
        },
        key_questions=("onset", "radiation", "alcohol", "vomiting"),
        red_flags=("shortness_of_breath", "confusion"),
        key_tests=("lipase", "abdominal_exam", "abdominal_ultrasound"),
        plan=(
            ("admit", "admission", "hospital"),
            ("intravenous fluid", "iv fluid", "fluids", "drip"),
            ("stop drinking", "avoid alcohol", "cut down on alcohol", "alcohol support", "abstain"),
        ),
        harmful=(("send you home", "go home and rest"),),
        differential=(
            "perforated peptic ulcer",
            "acute cholecystitis",
            "myocardial infarction",
            "ruptured abdominal aortic aneurysm",
            "bowel obstruction",
        ),
        ages=(25, 80),
    ),
    Condition(
        key="gastro_oesophageal_reflux_disease",
        name="gastro-oesophageal reflux disease",
        synonyms=(
            "GORD",
            "GERD",
            "gastroesophageal reflux disease",
            "acid reflux",
            "reflux",
            "reflux disease",
            "reflux oesophagitis",
        ),
        specialty="gastroenterology",
        complaint="a burning feeling in my chest after meals",
        hpi={
            "onset": ("It's been going on for about three months.", "It started a few months ago."),
            "character": ("It's a burning feeling that rises upwards.",),
            "location": ("It's behind my breastbone.",),
            "timing": ("It's worst in the evenings and at night.",),
            "aggravating": ("Big meals, spicy food and bending over make it worse.",),
            "relieving": ("Chalky antacid tablets from the chemist settle it for a while.",),
        },
        symptoms={
            "heartburn": (
                "I get a sour, acid taste coming up into my mouth.",
                "I get heartburn after most meals.",
            ),
            "abdominal_pain": ("I sometimes get a dull ache at the top of my belly.",),
        },
        optional_symptoms={
            "cough": ("I've had a dry cough at night.",),
            "sore_throat": ("My throat is often hoarse in the mornings.",),
            "nausea": ("I sometimes feel a bit queasy.",),
        },
        history={
            "smoking": ("I smoke about ten a day.",),
            "alcohol": ("I have a few glasses of wine most evenings.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.7 C, heart rate 78/min, blood pressure 128/82 mmHg, "
                "respiratory rate 14/min, SpO2 99% on room air; BMI 31."
            ),
            "abdominal_exam": "Soft; mild epigastric tenderness; no masses or organomegaly.",
            "endoscopy": "Los Angeles grade A oesophagitis; small hiatus hernia; no Barrett's, ulcer or mass.",
        },
        key_questions=("character", "timing", "aggravating"),
        red_flags=("dysphagia", "weight_change", "vomiting", "blood_in_stool"),
        key_tests=("abdominal_exam",),
        plan=(
            ("proton pump inhibitor", "ppi", "omeprazole", "lansoprazole"),
            ("lifestyle", "weight loss", "smaller meals", "raise the head", "avoid late meals", "trigger foods"),
            _SAFETY_NET,
        ),
        differential=("peptic ulcer disease", "angina", "functional dyspepsia", "oesophageal cancer", "biliary colic"),
        ages=(20, 75),
    ),
    Condition(
        key="peptic_ulcer_disease",
        name="peptic ulcer disease",
        synonyms=("peptic ulcer", "stomach ulcer", "gastric ulcer", "duodenal ulcer", "PUD", "ulcer"),
        specialty="gastroenterology",
        complaint="a gnawing pain at the top of my stomach",
        hpi={
            "onset": ("It started about six weeks ago.", "It began a month or two ago."),
            "character": ("It's a gnawing, burning ache.",),
            "location": ("It's just below my breastbone, in the middle.",),
            "timing": ("It's worst a couple of hours after meals and in the middle of the night.",),
            "relieving": ("Eating something or taking an antacid eases it.",),
        },
        symptoms={
            "abdominal_pain": ("My upper belly aches.",),
            "nausea": ("I feel queasy a lot of the time.",),
        },
        optional_symptoms={
            "appetite": ("I'm not as hungry as usual.",),
            "fatigue": ("I've been feeling more tired than normal.",),
        },
        history={
            "medications": (
                "I've been taking ibuprofen most days for my bad knee.",
                "I take anti-inflammatory painkillers from the chemist every day for my back.",
            ),
            "smoking": ("I smoke about fifteen a day.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.8 C, heart rate 84/min, blood pressure 130/80 mmHg, "
                "respiratory rate 14/min, SpO2 98% on room air."
            ),
            "abdominal_exam": "Epigastric tenderness; no guarding or rebound; bowel sounds normal.",
            "cbc": "Haemoglobin 124 g/L (mildly low), MCV 79 fL; white cells and platelets normal.",
            "stool_test": "Helicobacter pylori stool antigen positive; faecal calprotectin 30 ug/g.",
            "endoscopy": "2 cm clean-based duodenal bulb ulcer; no active bleeding; biopsies positive for H. pylori.",
        },
        key_questions=("character", "timing", "relieving", "medications"),
        red_flags=("blood_in_stool", "vomiting", "weight_change", "dysphagia"),
        key_tests=("abdominal_exam", "cbc", "stool_test"),
        plan=(
            ("proton pump inhibitor", "ppi", "omeprazole", "lansoprazole"),
            (
                "stop ibuprofen",
                "stop the ibuprofen",
                "avoid ibuprofen",
                "stop anti-inflammator",
                "avoid anti-inflammator",
                "stop nsaid",
                "avoid nsaid",
            ),
            ("eradication", "helicobacter", "h. pylori", "h pylori", "triple therapy"),
        ),
        harmful=(
            ("continue ibuprofen", "keep taking ibuprofen", "continue the ibuprofen", "keep taking the ibuprofen"),
        ),
        differential=(
            "gastro-oesophageal reflux disease",
            "gastric cancer",
            "functional dyspepsia",
            "biliary colic",
            "chronic pancreatitis",
        ),
        ages=(25, 80),
    ),
    Condition(
        key="viral_gastroenteritis",
        name="viral gastroenteritis",
        synonyms=("gastroenteritis", "stomach bug", "tummy bug", "gastro", "norovirus", "stomach flu"),
        specialty="gastroenterology",
        complaint="being sick and having the runs",
        hpi={
            "onset": ("It started suddenly yesterday morning.", "It came on all at once the night before last."),
            "character": ("The pains are crampy and come in waves.",),
            "timing": ("It's settling a little today compared with yesterday.",),
        },
        symptoms={
            "diarrhea": (
                "I've had watery diarrhoea about eight times since yesterday.",
                "I keep having to rush to the toilet with runny, watery poo.",
            ),
            "vomiting": ("I've been sick five or six times.",),
            "nausea": ("I feel sick most of the time.",),
            "abdominal_pain": ("My belly cramps on and off.",),
        },
        optional_symptoms={
            "fever": ("I've felt a bit feverish.",),
            "muscle_aches": ("I ache all over.",),
            "thirst": ("My mouth feels really dry.",),
        },
        history={
            "sick_contacts": (
                "My partner and the kids had the same thing a couple of days ago.",
                "A few friends I ate with at a party have the same thing.",
            ),
        },
        tests={
            "vital_signs": (
                "Temperature 37.8 C, heart rate 98/min, blood pressure 112/70 mmHg, "
                "respiratory rate 16/min, SpO2 99% on room air."
            ),
            "general_exam": "Alert; dry mucous membranes; capillary refill 2 seconds.",
            "abdominal_exam": "Soft; mild generalised tenderness; no guarding; active bowel sounds.",
            "electrolytes": "Sodium 136 mmol/L, potassium 3.3 mmol/L (low), urea 7.9 mmol/L, creatinine 88 umol/L.",
            "stool_test": "Norovirus PCR positive; no bacterial pathogens; no blood.",
        },
        key_questions=("onset", "diarrhea", "vomiting", "sick_contacts", "travel"),
        red_flags=("blood_in_stool", "dizziness"),
        key_tests=("vital_signs", "general_exam", "abdominal_exam"),
        plan=(
            ("oral rehydration", "rehydration", "fluids", "dioralyte", "drink plenty"),
            ("hand washing", "wash your hands", "hygiene", "stay off work", "48 hours"),
            _SAFETY_NET,
        ),
        harmful=(("prescribe antibiotics", "course of antibiotics", "start antibiotics"),),
        differential=(
            "bacterial food poisoning",
            "inflammatory bowel disease",
            "acute appendicitis",
            "clostridioides difficile colitis",
        ),
        ages=(16, 70),
    ),
    Condition(
        key="irritable_bowel_syndrome",
        name="irritable bowel syndrome",
        synonyms=("IBS", "irritable bowel", "spastic colon", "IBS-D", "IBS-C", "IBS-M"),
        specialty="gastroenterology",
        complaint="tummy pain and bloating that's been going on for months",
        hpi={
            "onset": ("It started about a year ago.", "It began about eighteen months ago."),
            "character": ("It's a crampy ache with a lot of bloating.",),
            "location": ("It's across the lower half, mostly on the left.",),
            "timing": ("It comes and goes, with bad weeks and good weeks.",),
            "aggravating": ("Onions, bread and rushed meals set it off.",),
            "relieving": ("It eases once I've been to the toilet.",),
        },
        symptoms={
            "abdominal_pain": ("My belly cramps and swells up.",),
            "diarrhea": ("Some days I have loose, urgent poos.",),
            "constipation": ("Other days I can't go for three or four days.",),
        },
        optional_symptoms={
            "fatigue": ("I feel drained a lot of the time.",),
            "anxiety": ("I'm quite a worrier.",),
            "nausea": ("I sometimes feel a bit queasy.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.6 C, heart rate 72/min, blood pressure 118/74 mmHg, "
                "respiratory rate 14/min, SpO2 99% on room air."
            ),
            "abdominal_exam": "Soft; mild tenderness in the left iliac fossa; mildly distended; no masses.",
            "cbc": "Haemoglobin 136 g/L, white cells 6.2 x10^9/L, platelets 250 x10^9/L (all normal).",
            "crp": "CRP 2 mg/L (normal).",
            "stool_test": "Faecal calprotectin 18 ug/g (normal); stool culture negative.",
        },
        key_questions=("onset", "relieving", "diarrhea", "constipation", "family_history"),
        red_flags=("weight_change", "blood_in_stool"),
        key_tests=("abdominal_exam", "cbc", "crp", "stool_test"),
        plan=(
            ("diet", "dietary", "fodmap", "fibre", "dietitian"),
            ("antispasmodic", "mebeverine", "peppermint oil", "loperamide", "laxative"),
            _SAFETY_NET,
        ),
        harmful=(("co-codamol", "codeine for the pain"),),
        differential=(
            "coeliac disease",
            "inflammatory bowel disease",
            "colorectal cancer",
            "microscopic colitis",
            "ovarian cancer",
        ),
        ages=(18, 50),
    ),
    Condition(
        key="migraine",
        name="migraine",
        synonyms=("migraine with aura", "migraine without aura", "migraines", "migraine headache"),
        specialty="neurology",
        complaint="bad headaches that keep coming back",
        hpi={
            "onset": ("This one came on gradually this morning.", "This one started yesterday afternoon."),
            "character": ("It's a throbbing, pounding pain.",),
            "location": ("It's on one side of my head, usually the left.",),
            "timing": ("Each attack lasts from several hours up to a whole day.",),
            "aggravating": ("Moving about or climbing the stairs makes it worse.",),
            "relieving": ("Lying in a dark, quiet room and sleeping it off help.",),
            "prior_episodes": (
                "I've had attacks like this a couple of times a month for years.",
                "I've been getting these every few weeks since I was a teenager.",
            ),
        },
        symptoms={
            "headache": ("My head is pounding.",),
            "nausea": ("I feel sick with it.",),
            "photophobia": ("Light hurts my eyes when it's on.", "I can't bear bright lights during an attack."),
        },
        optional_symptoms={
            "vomiting": ("Sometimes I'm sick.",),
            "vision_changes": ("Before it starts I see zigzag flashing lights for about twenty minutes.",),
        },
        history={
            "family_history": ("My mum gets the same sort of headaches.",),
            "medications": ("I take paracetamol or ibuprofen when they come on, about eight days a month.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.7 C, heart rate 80/min, blood pressure 124/78 mmHg, "
                "respiratory rate 14/min, SpO2 99% on room air."
            ),
            "general_exam": "Pale, prefers the lights dimmed; no rash; no neck stiffness.",
            "neuro_exam": "Cranial nerves, power, reflexes and coordination normal; fundi normal, no papilloedema.",
        },
        key_questions=("character", "location", "prior_episodes", "vision_changes"),
        red_flags=("neck_stiffness", "fever", "weakness_numbness"),
        key_tests=("vital_signs", "neuro_exam"),
        plan=(
            ("triptan", "sumatriptan", "rizatriptan", "zolmitriptan"),
            ("headache diary", "diary", "propranolol", "topiramate", "amitriptyline", "prevention", "preventive"),
            _SAFETY_NET,
        ),
        harmful=(("co-codamol", "tramadol", "morphine"),),
        differential=(
            "tension-type headache",
            "cluster headache",
            "medication overuse headache",
            "subarachnoid haemorrhage",
            "idiopathic intracranial hypertension",
        ),
        ages=(16, 55),
    ),
    Condition(
        key="subarachnoid_haemorrhage",
        name="subarachnoid haemorrhage",
        synonyms=(
            "SAH",
            "subarachnoid hemorrhage",
            "aneurysmal subarachnoid haemorrhage",
            "subarachnoid bleed",
            "brain haemorrhage",
            "brain bleed",
            "ruptured aneurysm",
        ),
        specialty="neurosurgery",
        complaint="the worst headache of my life",
        hpi={
            "onset": ("It came on in a split second, about two hours ago.", "It hit me out of nowhere this afternoon."),
            "character": ("It felt like being hit on the back of the head with a bat.",),
            "location": ("It's at the back of my head.",),
            "severity": ("It's ten out of ten, by far the worst I've ever had.",),
            "timing": ("It hasn't eased at all since it started.",),
            "prior_episodes": ("I've never had anything like this before.",),
        },
        symptoms={
            "headache": ("My head is killing me.",),
            "neck_stiffness": ("My neck is stiff and sore.",),
            "vomiting": ("I've been sick twice.",),
        },
        optional_symptoms={
            "photophobia": ("The light really hurts my eyes.",),
            "syncope": ("I think I blacked out for a moment when it hit.",),
        },
        history={
            "past_medical_history": ("I have high blood pressure.",),
            "medications": ("I'm meant to take amlodipine, but I often forget.",),
            "smoking": ("I smoke twenty a day.",),
            "family_history": ("My mother died suddenly of a bleed in her head at 52.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.2 C, heart rate 58/min, blood pressure 182/98 mmHg, "
                "respiratory rate 16/min, SpO2 98% on room air."
            ),
            "neuro_exam": (
                "GCS 15; neck stiffness with positive Kernig's sign; pupils equal and reactive; no focal deficit."
            ),
            "ct_head": (
                "Hyperdense blood in the basal cisterns and both Sylvian fissures; no hydrocephalus or mass effect."
            ),
            "lumbar_puncture": (
                "Xanthochromia present; red cells 12,000/uL not clearing across tubes; opening pressure 24 cmH2O."
            ),
            "coagulation": "INR 1.0, APTT 29 s (normal).",
        },
        key_questions=("onset", "character", "severity", "prior_episodes"),
        red_flags=("syncope", "confusion", "weakness_numbness", "seizures"),
        key_tests=("neuro_exam", "ct_head"),
        plan=(
            ("emergency", "999", "ambulance", "admit", "neurosurg"),
            ("ct head", "ct scan", "brain scan", "ct angiogram", "angiogram"),
            ("nimodipine", "blood pressure control", "lower the blood pressure"),
        ),
        harmful=(("thrombolysis", "alteplase", "start aspirin", "give aspirin"), ("send you home", "go home and rest")),
        differential=(
            "migraine",
            "bacterial meningitis",
            "reversible cerebral vasoconstriction syndrome",
            "intracerebral haemorrhage",
        ),
        ages=(30, 75),
    ),
    Condition(
        key="bacterial_meningitis",
        name="bacterial meningitis",
        synonyms=(
            "meningitis",
            "meningococcal meningitis",
            "pneumococcal meningitis",
            "meningococcal disease",
            "meningococcal septicaemia",
        ),
        specialty="infectious diseases",
        complaint="a terrible headache and a high temperature",
        hpi={
            "onset": ("It started yesterday afternoon.", "It began about eighteen hours ago."),
            "character": ("It's a severe, pounding pain.",),
            "location": ("It's all over my head.",),
            "severity": ("It's nine out of ten.",),
            "timing": ("It has got steadily worse over the last day.",),
        },
        symptoms={
            "headache": ("My head is pounding.",),
            "fever": ("I've been burning up and shivering.", "I've had a high temperature with shaking chills."),
            "neck_stiffness": ("My neck is really stiff and I can't bend it forward.",),
            "photophobia": ("Bright light hurts my eyes.",),
        },
        optional_symptoms={
            "vomiting": ("I've been sick a few times.",),
            "rash": ("I've noticed some tiny purple spots on my legs.",),
            "confusion": ("I keep getting muddled.",),
            "muscle_aches": ("My legs ache terribly.",),
        },
        history={
            "occupation": ("I'm a first-year university student.",),
            "living_situation": ("I share a flat in halls with five others.",),
        },
        tests={
            "vital_signs": (
                "Temperature 39.4 C, heart rate 124/min, blood pressure 96/58 mmHg, "
                "respiratory rate 24/min, SpO2 96% on room air."
            ),
            "neuro_exam": "Drowsy, GCS 14; marked neck stiffness; Kernig's sign positive; no focal deficit.",
            "cbc": "White cells 22.4 x10^9/L with neutrophilia; platelets 140 x10^9/L.",
            "crp": "CRP 260 mg/L.",
            "blood_culture": "Gram-negative diplococci (Neisseria meningitidis) grown at 18 hours.",
            "lumbar_puncture": (
                "Turbid CSF; opening pressure 32 cmH2O; white cells 1,800/uL (90% neutrophils); "
                "protein 2.6 g/L; glucose 1.2 mmol/L (serum 6.4); Gram-negative diplococci seen."
            ),
        },
        key_questions=("onset", "fever", "neck_stiffness", "photophobia"),
        red_flags=("rash", "confusion", "seizures"),
        key_tests=("vital_signs", "blood_culture", "lumbar_puncture"),
        plan=(
            ("antibiotic", "ceftriaxone", "cefotaxime", "benzylpenicillin"),
            ("emergency", "999", "ambulance", "hospital", "admit"),
            ("dexamethasone", "steroid"),
        ),
        harmful=(("send you home", "go home and rest", "wait and see"),),
        differential=(
            "viral meningitis",
            "subarachnoid haemorrhage",
            "encephalitis",
            "sepsis",
            "migraine",
        ),
        ages=(16, 80),
    ),
    Condition(
        key="ischaemic_stroke",
        name="ischaemic stroke",
        synonyms=(
            "stroke",
            "ischemic stroke",
            "acute ischaemic stroke",
            "cerebral infarction",
            "cerebral infarct",
            "CVA",
            "cerebrovascular accident",
        ),
        specialty="neurology",
        complaint="my arm and face suddenly went weak",
        hpi={
            "onset": (
                "It came on suddenly about an hour ago while I was making breakfast.",
                "It started all at once about ninety minutes ago.",
            ),
            "character": ("My arm feels heavy and clumsy, like it doesn't belong to me.",),
            "location": ("It's my right arm and the right side of my face.",),
            "timing": ("It hasn't got any better since it started.",),
            "prior_episodes": ("Last month my right hand went dead for ten minutes and then came back to normal.",),
        },
        symptoms={
            "weakness_numbness": ("My right arm is weak and numb.", "I can barely lift my right arm."),
            "speech_difficulty": ("I can't get my words out properly.",),
        },
        optional_symptoms={
            "vision_changes": ("I can't see things off to my right side.",),
            "dizziness": ("I feel a bit unsteady on my feet.",),
            "palpitations": ("I sometimes feel my heart flutter.",),
        },
        history={
            "past_medical_history": ("I have high blood pressure and type 2 diabetes.",),
            "medications": ("I take ramipril and metformin.",),
            "smoking": ("I've smoked twenty a day for forty years.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.9 C, heart rate 92/min irregular, blood pressure 178/96 mmHg, "
                "respiratory rate 16/min, SpO2 97% on room air."
            ),
            "neuro_exam": (
                "Right facial weakness sparing the forehead; right arm power 2/5, right leg 4/5; "
                "expressive dysphasia; reduced sensation on the right; NIHSS 9."
            ),
            "ct_head": (
                "No haemorrhage; early loss of grey-white differentiation in the left middle cerebral artery territory."
            ),
            "glucose": "Capillary glucose 8.4 mmol/L.",
            "ecg": "Atrial fibrillation, ventricular rate 92/min; no acute ST changes.",
            "mri_brain": "Restricted diffusion in the left middle cerebral artery territory (acute infarct).",
        },
        key_questions=("onset", "weakness_numbness", "speech_difficulty", "medications"),
        red_flags=("headache", "dysphagia"),
        key_tests=("neuro_exam", "ct_head", "glucose", "ecg"),
        plan=(
            ("thrombolysis", "thrombectomy", "alteplase", "tenecteplase", "stroke unit", "stroke team"),
            ("emergency", "999", "ambulance", "hospital", "admit"),
            ("nil by mouth", "swallow screen", "swallow assessment"),
        ),
        harmful=(("send you home", "wait and see", "go home and rest"),),
        differential=(
            "hypoglycaemia",
            "intracerebral haemorrhage",
            "transient ischaemic attack",
            "Todd's paresis",
            "brain tumour",
        ),
        ages=(50, 90),
    ),
    Condition(
        key="streptococcal_pharyngitis",
        name="streptococcal pharyngitis",
        synonyms=(
            "strep throat",
            "streptococcal tonsillitis",
            "bacterial tonsillitis",
            "tonsillitis",
            "pharyngitis",
            "group A streptococcal pharyngitis",
        ),
        specialty="ENT",
        complaint="a really sore throat",
        hpi={
            "onset": ("It started two days ago.", "It came on the day before yesterday."),
            "character": ("It's a raw, burning pain.",),
            "severity": ("It's about eight out of ten.",),
            "timing": ("It's been getting worse each day.",),
        },
        symptoms={
            "sore_throat": ("My throat is really sore.",),
            "fever": ("I've had a temperature of 38.8.", "I've been hot and shivery."),
            "dysphagia": ("It hurts to swallow.",),
        },
        optional_symptoms={
            "headache": ("I've got a bit of a headache.",),
            "appetite": ("I've gone off my food.",),
        },
        history={
            "sick_contacts": ("My children have had the same thing this week.",),
        },
        tests={
            "vital_signs": (
                "Temperature 38.8 C, heart rate 104/min, blood pressure 120/76 mmHg, "
                "respiratory rate 16/min, SpO2 99% on room air."
            ),
            "throat_exam": "Enlarged red tonsils with white exudate on both sides; uvula central; no quinsy.",
            "neck_exam": "Tender, enlarged lymph nodes at the front of the neck on both sides.",
            "throat_swab": "Rapid antigen test positive for group A streptococcus.",
        },
        key_questions=("fever", "cough", "runny_nose", "allergies"),
        red_flags=("shortness_of_breath",),
        key_tests=("vital_signs", "throat_exam", "throat_swab"),
        plan=(
            ("antibiotic", "penicillin", "phenoxymethylpenicillin", "clarithromycin"),
            ("paracetamol", "ibuprofen", "painkiller", "pain relief", "fluids"),
            _SAFETY_NET,
        ),
        differential=(
            "viral pharyngitis",
            "infectious mononucleosis",
            "peritonsillar abscess",
            "epiglottitis",
        ),
        ages=(16, 45),
    ),
    Condition(
        key="infectious_mononucleosis",
        name="infectious mononucleosis",
        synonyms=(
            "glandular fever",
            "mono",
            "infectious mono",
            "EBV infection",
            "Epstein-Barr virus infection",
            "kissing disease",
        ),
        specialty="infectious diseases",
        complaint="a sore throat and feeling wiped out for over a week",
        hpi={
            "onset": ("It started about ten days ago.", "It began almost two weeks ago."),
            "timing": ("It's not getting any better.",),
            "prior_episodes": ("I've never been this poorly before.",),
        },
        symptoms={
            "sore_throat": ("My throat is very sore.",),
            "fatigue": ("I'm exhausted and sleeping most of the day.", "I can hardly get off the sofa."),
            "fever": ("I've had a temperature on and off.",),
        },
        optional_symptoms={
            "muscle_aches": ("My whole body aches.",),
            "headache": ("I've had a dull headache.",),
            "appetite": ("I've hardly eaten anything.",),
        },
        history={
            "sick_contacts": ("My partner was ill with something similar a few weeks ago.",),
            "occupation": ("I'm a university student.",),
        },
        tests={
            "vital_signs": (
                "Temperature 38.2 C, heart rate 96/min, blood pressure 116/72 mmHg, "
                "respiratory rate 16/min, SpO2 99% on room air."
            ),
            "throat_exam": "Enlarged tonsils with grey-white exudate; petechiae on the palate.",
            "neck_exam": "Tender, enlarged lymph nodes at the front and back of the neck.",
            "abdominal_exam": "Spleen palpable 2 cm below the left costal margin; mildly tender.",
            "monospot": "Monospot positive.",
            "cbc": "White cells 13.2 x10^9/L with 58% lymphocytes; atypical lymphocytes on the film.",
            "lft": "ALT 148 U/L, ALP 160 U/L, bilirubin 19 umol/L.",
        },
        key_questions=("onset", "fatigue", "fever", "sick_contacts"),
        red_flags=("shortness_of_breath", "abdominal_pain"),
        key_tests=("throat_exam", "monospot", "cbc"),
        plan=(
            ("rest", "fluids", "paracetamol", "ibuprofen", "supportive"),
            ("avoid contact sport", "no contact sport", "avoid sport", "contact sports", "heavy lifting"),
            _SAFETY_NET,
        ),
        harmful=(("amoxicillin", "ampicillin"),),
        differential=(
            "streptococcal pharyngitis",
            "cytomegalovirus infection",
            "acute HIV seroconversion",
            "toxoplasmosis",
            "lymphoma",
        ),
        ages=(16, 30),
    ),
    Condition(
        key="acute_otitis_media",
        name="acute otitis media",
        synonyms=("otitis media", "middle ear infection", "ear infection", "AOM"),
        specialty="ENT",
        complaint="a painful ear",
        hpi={
            "onset": ("It started two days ago.", "It began the night before last."),
            "character": ("It's a deep, throbbing pain.",),
            "location": ("It's my left ear.",),
            "severity": ("It's about seven out of ten.",),
            "relieving": ("Ibuprofen helps for a few hours.",),
        },
        symptoms={
            "ear_pain": ("My ear really hurts.", "My ear aches and everything sounds muffled on that side."),
            "fever": ("I've had a temperature of about 38.",),
        },
        optional_symptoms={
            "runny_nose": ("I've had a blocked, runny nose for the past week.",),
            "sore_throat": ("My throat was scratchy last week.",),
        },
        tests={
            "vital_signs": (
                "Temperature 38.1 C, heart rate 92/min, blood pressure 122/78 mmHg, "
                "respiratory rate 14/min, SpO2 99% on room air."
            ),
            "ear_exam": (
                "Left eardrum red and bulging with loss of the light reflex; no perforation or discharge; "
                "no tenderness or swelling behind the ear."
            ),
            "throat_exam": "Mildly red throat; no tonsillar exudate.",
        },
        key_questions=("onset", "ear_pain", "fever", "runny_nose"),
        red_flags=("neck_stiffness", "weakness_numbness"),
        key_tests=("vital_signs", "ear_exam"),
        plan=(
            ("paracetamol", "ibuprofen", "painkiller", "pain relief", "analgesia"),
            ("amoxicillin", "antibiotic", "delayed prescription", "back-up prescription"),
            _SAFETY_NET,
        ),
        harmful=(("cotton bud", "syringe the ear", "ear syringing"),),
        differential=(
            "otitis externa",
            "referred dental pain",
            "mastoiditis",
            "temporomandibular joint dysfunction",
        ),
        ages=(16, 50),
    ),
    Condition(
        key="major_depressive_disorder",
        name="major depressive disorder",
        synonyms=(
            "depression",
            "clinical depression",
            "major depression",
            "depressive episode",
            "major depressive episode",
            "MDD",
        ),
        specialty="psychiatry",
        complaint="feeling low and not myself for weeks",
        hpi={
            "onset": ("It's been creeping up for about two months.", "It started around three months ago."),
            "character": ("Nothing feels enjoyable anymore, even things I used to love.",),
            "timing": ("It's there nearly every day, worst in the mornings.",),
            "prior_episodes": ("I had a bad patch like this about five years ago.",),
        },
        symptoms={
            "low_mood": (
                "I feel low and hopeless every day, and sometimes I wish I wouldn't wake up.",
                "I feel empty nearly all the time, and sometimes I think everyone would be better off without me.",
            ),
            "sleep": ("I wake at four in the morning and can't get back to sleep.",),
            "fatigue": ("I've got no energy at all.",),
            "appetite": ("I've gone off my food.",),
        },
        optional_symptoms={
            "weight_change": ("I've lost about four kilos without trying.",),
            "anxiety": ("I feel on edge a lot of the time too.",),
        },
        history={
            "alcohol": ("I've been drinking more, about half a bottle of wine a night.",),
            "living_situation": ("I've lived on my own since my partner left last year.",),
            "occupation": ("I work in a call centre and I'm struggling to keep up.",),
        },
        sensitive=("low_mood", "alcohol"),
        tests={
            "vital_signs": (
                "Temperature 36.6 C, heart rate 74/min, blood pressure 124/80 mmHg, "
                "respiratory rate 14/min, SpO2 99% on room air."
            ),
            "mental_state_exam": (
                "Flat affect, poor eye contact, slowed speech; low mood; passive thoughts of death "
                "without plan or intent; no psychotic features; insight intact."
            ),
            "phq9": "PHQ-9 score 19 (moderately severe); item 9 scored 1.",
            "tsh": "TSH 2.1 mU/L (normal).",
            "audit": "AUDIT score 12 (hazardous drinking).",
        },
        key_questions=("onset", "character", "sleep", "appetite", "alcohol"),
        red_flags=("low_mood",),
        key_tests=("mental_state_exam", "phq9", "tsh"),
        plan=(
            (
                "antidepressant",
                "sertraline",
                "citalopram",
                "fluoxetine",
                "ssri",
                "talking therap",
                "cbt",
                "counselling",
                "psychological therap",
            ),
            ("safety plan", "crisis", "samaritans", "urgent help"),
            _SAFETY_NET,
        ),
        harmful=(("pull yourself together", "snap out of it"),),
        differential=(
            "bipolar disorder",
            "hypothyroidism",
            "generalised anxiety disorder",
            "alcohol use disorder",
            "adjustment disorder",
        ),
        ages=(18, 75),
    ),
    Condition(
        key="generalised_anxiety_disorder",
        name="generalised anxiety disorder",
        synonyms=("GAD", "generalized anxiety disorder", "anxiety disorder", "anxiety"),
        specialty="psychiatry",
        complaint="worrying all the time and not being able to switch off",
        hpi={
            "onset": ("It's been going on for about eight months.", "It started over half a year ago."),
            "character": ("It's a constant sense of dread, like something bad is about to happen.",),
            "timing": ("It's there nearly every day, from the moment I wake up.",),
            "aggravating": ("Anything unexpected, even a phone call, sets it off.",),
        },
        symptoms={
            "anxiety": (
                "I worry about everything, money, my family's health, and I can't stop it.",
                "I'm nervous and on edge all the time.",
            ),
            "sleep": ("I lie awake for hours with my mind racing.",),
            "fatigue": ("I'm tired all the time.",),
            "muscle_aches": ("My shoulders are always tense and aching.",),
        },
        optional_symptoms={
            "palpitations": ("Sometimes my heart pounds.",),
            "headache": ("I get tight headaches across my forehead.",),
            "nausea": ("I often feel a bit queasy.",),
        },
        history={
            "alcohol": ("I have a couple of glasses of wine most nights to calm down.",),
            "occupation": ("I'm a teacher.",),
        },
        sensitive=("alcohol",),
        tests={
            "vital_signs": (
                "Temperature 36.7 C, heart rate 96/min, blood pressure 132/84 mmHg, "
                "respiratory rate 16/min, SpO2 99% on room air."
            ),
            "mental_state_exam": (
                "Restless and fidgety; anxious affect; worried thought content; no thoughts of self-harm; "
                "no psychotic features."
            ),
            "gad7": "GAD-7 score 16 (severe).",
            "tsh": "TSH 1.8 mU/L (normal).",
        },
        key_questions=("onset", "anxiety", "sleep", "alcohol"),
        red_flags=("low_mood",),
        key_tests=("mental_state_exam", "gad7", "tsh"),
        plan=(
            (
                "cbt",
                "talking therap",
                "psychological therap",
                "self-help",
                "counselling",
                "sertraline",
                "ssri",
                "antidepressant",
            ),
            _SAFETY_NET,
        ),
        harmful=(("diazepam", "lorazepam"),),
        differential=(
            "hyperthyroidism",
            "major depressive disorder",
            "panic disorder",
            "alcohol withdrawal",
            "caffeine excess",
        ),
        ages=(18, 65),
    ),
    Condition(
        key="gout",
        name="gout",
        synonyms=("acute gout", "gout flare", "gouty arthritis", "podagra", "crystal arthritis"),
        specialty="rheumatology",
        complaint="a swollen, agonising big toe",
        hpi={
            "onset": ("It came on overnight, at about three in the morning.", "It started suddenly last night."),
            "character": ("It's a burning, throbbing pain.",),
            "location": ("It's the joint at the base of my right big toe.",),
            "severity": ("It's ten out of ten; even the bedsheet touching it is unbearable.",),
            "prior_episodes": ("I had something similar in the same toe last year that settled in a week.",),
        },
        symptoms={
            "joint_pain": ("My toe joint is swollen, red and hot.",),
            "sleep": ("The pain kept me awake most of the night.",),
        },
        optional_symptoms={
            "fever": ("I felt a bit feverish last night.",),
        },
        history={
            "alcohol": ("I drink four or five pints most evenings, more at weekends.",),
            "past_medical_history": ("I have high blood pressure.",),
            "medications": ("I take a water tablet every morning.",),
        },
        sensitive=("alcohol",),
        tests={
            "vital_signs": (
                "Temperature 37.6 C, heart rate 88/min, blood pressure 152/94 mmHg, "
                "respiratory rate 14/min, SpO2 98% on room air."
            ),
            "joint_exam": (
                "Right first metatarsophalangeal joint hot, red, swollen and exquisitely tender; other joints normal."
            ),
            "uric_acid": "Serum urate 0.52 mmol/L.",
            "crp": "CRP 48 mg/L.",
            "electrolytes": "Sodium 138 mmol/L, potassium 4.1 mmol/L, creatinine 108 umol/L, eGFR 68 mL/min.",
        },
        key_questions=("onset", "location", "prior_episodes", "alcohol", "medications"),
        red_flags=("fever",),
        key_tests=("joint_exam", "uric_acid", "crp"),
        plan=(
            ("colchicine", "naproxen", "nsaid", "anti-inflammatory", "prednisolone", "steroid"),
            ("cut down on alcohol", "reduce alcohol", "less alcohol", "diet", "allopurinol", "urate-lowering"),
            _SAFETY_NET,
        ),
        differential=("septic arthritis", "pseudogout", "cellulitis", "reactive arthritis"),
        ages=(30, 85),
    ),
    Condition(
        key="rheumatoid_arthritis",
        name="rheumatoid arthritis",
        synonyms=("RA", "rheumatoid", "rheumatoid disease", "inflammatory arthritis"),
        specialty="rheumatology",
        complaint="painful, swollen hands",
        hpi={
            "onset": ("It started about four months ago.", "It began gradually over the last few months."),
            "location": ("It's the knuckles and middle finger joints of both hands, and both wrists.",),
            "timing": ("My hands are very stiff for over an hour every morning.",),
            "relieving": ("It loosens up as the day goes on, and a hot shower helps.",),
        },
        symptoms={
            "joint_pain": ("My knuckles and wrists are swollen and sore.",),
            "fatigue": ("I'm exhausted all the time.",),
        },
        optional_symptoms={
            "weight_change": ("I've lost a couple of kilos.",),
            "fever": ("I've been feeling a bit feverish at times.",),
        },
        history={
            "family_history": ("My aunt had bad arthritis that twisted her fingers.",),
            "smoking": ("I've smoked for twenty years.",),
            "occupation": ("I'm a hairdresser and I'm struggling to hold the scissors.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.1 C, heart rate 82/min, blood pressure 126/80 mmHg, "
                "respiratory rate 14/min, SpO2 98% on room air."
            ),
            "joint_exam": (
                "Symmetrical swelling and tenderness of the MCP and PIP joints of both hands and both wrists; "
                "positive squeeze test."
            ),
            "autoantibodies": "Rheumatoid factor 86 IU/mL; anti-CCP >200 U/mL (strongly positive); ANA negative.",
            "crp": "CRP 32 mg/L.",
            "cbc": "Haemoglobin 114 g/L (normocytic); white cells and platelets normal.",
            "joint_xray": "Periarticular osteopenia and early erosions at the 2nd and 3rd MCP joints.",
        },
        key_questions=("onset", "location", "timing", "family_history"),
        red_flags=("fever", "shortness_of_breath"),
        key_tests=("joint_exam", "autoantibodies", "crp", "joint_xray"),
        plan=(
            ("rheumatology", "rheumatolog", "specialist", "referral", "refer"),
            ("methotrexate", "dmard", "disease-modifying", "hydroxychloroquine", "sulfasalazine", "prednisolone"),
            _SAFETY_NET,
        ),
        differential=(
            "osteoarthritis",
            "psoriatic arthritis",
            "systemic lupus erythematosus",
            "viral arthritis",
            "polyarticular gout",
        ),
        ages=(25, 75),
    ),
    Condition(
        key="lumbar_disc_herniation",
        name="lumbar disc herniation",
        synonyms=(
            "sciatica",
            "slipped disc",
            "disc prolapse",
            "prolapsed disc",
            "herniated disc",
            "disc herniation",
            "prolapsed intervertebral disc",
            "lumbar radiculopathy",
        ),
        specialty="orthopaedics",
        complaint="bad back pain going down my leg",
        hpi={
            "onset": ("It came on two weeks ago.", "It started about ten days ago."),
            "character": ("It's a sharp, electric, shooting pain.",),
            "radiation": ("It shoots from my buttock down the back of my left leg to my foot.",),
            "severity": ("It's about seven out of ten.",),
            "aggravating": ("Sitting for long and bending forward make it worse.",),
            "relieving": ("Walking about gently helps a little.",),
        },
        symptoms={
            "back_pain": ("My lower back aches.",),
            "weakness_numbness": ("I've got pins and needles along the outside of my left foot.",),
        },
        optional_symptoms={
            "sleep": ("The pain wakes me when I turn over in bed.",),
        },
        history={
            "occupation": ("I work in a warehouse lifting heavy boxes.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.8 C, heart rate 80/min, blood pressure 130/82 mmHg, "
                "respiratory rate 14/min, SpO2 99% on room air."
            ),
            "back_exam": (
                "Tender lower lumbar paraspinal muscles; reduced lumbar flexion; "
                "straight leg raise positive on the left at 40 degrees."
            ),
            "neuro_exam": (
                "Reduced left ankle jerk; reduced sensation over the outer left foot; left plantar flexion 4+/5; "
                "normal perianal sensation."
            ),
            "spine_imaging": (
                "L5/S1 posterolateral disc protrusion compressing the left S1 nerve root; no cauda equina compression."
            ),
        },
        key_questions=("onset", "radiation", "aggravating", "weakness_numbness"),
        red_flags=("urinary_symptoms", "constipation", "fever"),
        key_tests=("back_exam", "neuro_exam"),
        plan=(
            ("painkiller", "pain relief", "analgesia", "naproxen", "ibuprofen", "paracetamol", "neuropathic"),
            ("stay active", "keep active", "keep moving", "physiotherapy", "physio"),
            ("return if", "come back", "bladder", "bowel", "urgent", "follow-up", "follow up", "review"),
        ),
        harmful=(("strict bed rest", "stay in bed"),),
        differential=(
            "mechanical back pain",
            "cauda equina syndrome",
            "lumbar spinal stenosis",
            "spinal metastasis",
            "hip osteoarthritis",
        ),
        ages=(25, 60),
    ),
    Condition(
        key="cellulitis",
        name="cellulitis",
        synonyms=("skin infection", "bacterial skin infection", "erysipelas", "leg cellulitis"),
        specialty="dermatology",
        complaint="a red, swollen, painful leg",
        hpi={
            "onset": ("It started three days ago.", "It began the day before yesterday."),
            "character": ("It feels hot, tight and tender.",),
            "location": ("It's on my left shin.",),
            "radiation": ("The redness has spread up towards my knee.",),
            "timing": ("It's getting bigger every day.",),
        },
        symptoms={
            "rash": ("There's a hot red patch on my shin.",),
            "leg_swelling": ("My lower leg is swollen.",),
            "fever": ("I've had chills and felt feverish.",),
        },
        optional_symptoms={
            "fatigue": ("I feel washed out.",),
            "muscle_aches": ("I ache all over.",),
        },
        history={
            "past_medical_history": ("I have type 2 diabetes.",),
        },
        tests={
            "vital_signs": (
                "Temperature 38.3 C, heart rate 98/min, blood pressure 132/80 mmHg, "
                "respiratory rate 16/min, SpO2 98% on room air."
            ),
            "skin_exam": (
                "Poorly demarcated, hot, tender redness and swelling over the left shin, 12 cm across; "
                "no blistering, crepitus or fluctuance; cracked skin between the toes."
            ),
            "leg_exam": "Pitting swelling of the lower left leg; calf soft; foot pulses present.",
            "cbc": "White cells 13.8 x10^9/L with neutrophilia.",
            "crp": "CRP 96 mg/L.",
            "glucose": "Random glucose 11.2 mmol/L.",
        },
        key_questions=("onset", "radiation", "fever", "allergies", "past_medical_history"),
        red_flags=("confusion",),
        key_tests=("vital_signs", "skin_exam", "crp"),
        plan=(
            ("antibiotic", "flucloxacillin", "clarithromycin", "doxycycline", "cefalexin"),
            ("mark the edge", "draw around", "outline", "elevate", "elevation"),
            ("return if", "come back", "review", "follow-up", "follow up", "48 hours"),
        ),
        differential=(
            "deep vein thrombosis",
            "venous eczema",
            "necrotising fasciitis",
            "contact dermatitis",
        ),
        ages=(30, 85),
    ),
    Condition(
        key="ectopic_pregnancy",
        name="ectopic pregnancy",
        synonyms=("ectopic", "tubal pregnancy", "ruptured ectopic", "ectopic gestation"),
        specialty="gynaecology",
        complaint="pain low down in my tummy",
        hpi={
            "onset": ("It started this morning.", "It came on about six hours ago."),
            "character": ("It's a sharp, stabbing pain.",),
            "location": ("It's low down on my right side.",),
            "radiation": ("Sometimes I feel it at the tip of my right shoulder.",),
            "severity": ("It's about seven out of ten.",),
            "timing": ("It's been getting steadily worse.",),
        },
        symptoms={
            "abdominal_pain": ("My lower belly hurts.",),
            "vaginal_symptoms": ("I've had some dark brown spotting for two days.",),
        },
        optional_symptoms={
            "dizziness": ("I feel light-headed when I stand up.",),
            "nausea": ("I feel a bit sick.",),
        },
        history={
            "menstrual_history": (
                "My last period was about seven weeks ago, and I'm normally regular.",
                "My period is three weeks late.",
            ),
            "sexual_history": ("I have a regular partner and we don't always use condoms.",),
            "past_medical_history": ("I was treated for a pelvic infection a few years ago.",),
        },
        sensitive=("sexual_history",),
        tests={
            "vital_signs": (
                "Temperature 36.9 C, heart rate 112/min, blood pressure 102/64 mmHg, "
                "respiratory rate 20/min, SpO2 98% on room air."
            ),
            "abdominal_exam": "Tender in the right iliac fossa with guarding; mild rebound tenderness.",
            "pregnancy_test": "Urine pregnancy test positive; serum beta-hCG 2,400 IU/L.",
            "pelvic_ultrasound": (
                "Empty uterus; 2.5 cm complex right adnexal mass separate from the ovary; "
                "small amount of free fluid in the pouch of Douglas."
            ),
            "cbc": "Haemoglobin 112 g/L.",
            "pelvic_exam": "Cervical motion tenderness; right adnexal tenderness; a little dark blood; os closed.",
        },
        key_questions=("location", "vaginal_symptoms", "menstrual_history", "sexual_history"),
        red_flags=("dizziness", "syncope"),
        key_tests=("vital_signs", "abdominal_exam", "pregnancy_test", "pelvic_ultrasound"),
        plan=(
            ("gynaecology", "gynaecolog", "gynecolog", "early pregnancy unit", "epau", "laparoscopy", "methotrexate", "surgery"),
            ("emergency", "hospital", "admit", "urgent", "a&e"),
        ),
        harmful=(("send you home", "go home and rest"),),
        differential=(
            "miscarriage",
            "acute appendicitis",
            "ovarian torsion",
            "ruptured ovarian cyst",
            "pelvic inflammatory disease",
        ),
        sexes=("female",),
        ages=(18, 44),
    ),
)
